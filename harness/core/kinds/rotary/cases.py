"""The rotary verify cases: every rope_type, both layouts, partial rotary, offsets, every dtype,
head_dims that are not powers of two, and apply in the forms kernels take.

Cheap on purpose (every registered implementation runs all of them, cache and apply): the
largest is one long context of 131 072 positions at head_dim 4. Offsets put float16 past 2048
and bfloat16 past 256, where positions stop being exact in those dtypes. The apply forms (forms.py:
sequence-first q and k, k with fewer heads than q down to one, position ids per sequence) are
cases of their own, which the cache workload and implementations that did not declare them skip.
"""

from __future__ import annotations

import random

from harness.core.kinds.rotary.spec import LAYOUTS, RotarySpec
from harness.core.kinds.fields import DTYPES

#: A case reaching this many positions is "long" (as the 1-D table's cases count it).
LONG_POSITIONS = 100_000

_LONGROPE_SHORT = (1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.1, 4.0)
_LONGROPE_LONG = (1.0, 1.5, 2.2, 3.0, 4.5, 6.0, 8.0, 12.0)
_LONGROPE = dict(rope_type="longrope", head_dim=16, factor=4.0, original_max_position_embeddings=256,
                 short_factor=_LONGROPE_SHORT, long_factor=_LONGROPE_LONG)

#: Conventions checked in float32 (fields over a 300 x 64 default).
_FLOAT32: list[dict] = [
    dict(length=1, head_dim=2),
    dict(length=16, head_dim=4, offset=1),
    dict(layout="interleaved"),
    dict(rotary_dim=16),
    dict(rotary_dim=16, layout="interleaved"),
    dict(length=2048, head_dim=128, base=500000.0),
    dict(length=131_072, head_dim=4),
    dict(length=64, offset=1_000_000, layout="interleaved"),
    dict(rope_type="linear", factor=4.0),
    dict(rope_type="dynamic", factor=2.0, max_position_embeddings=256),                 # rescaled base
    dict(rope_type="dynamic", factor=2.0, max_position_embeddings=4096, layout="interleaved"),
    dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64),
    dict(rope_type="yarn", factor=40.0, original_max_position_embeddings=64, mscale=0.707,
         mscale_all_dim=1.0, truncate=False, rotary_dim=32, layout="interleaved"),
    dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=128, attention_factor=1.25,
         beta_fast=16.0, beta_slow=2.0),
    dict(rope_type="llama3", factor=8.0, original_max_position_embeddings=8192, base=500000.0),
    dict(rope_type="llama3", factor=4.0, original_max_position_embeddings=256, low_freq_factor=2.0,
         high_freq_factor=8.0, layout="interleaved"),
    dict(_LONGROPE, length=200),                          # short factors: seq <= ompe
    dict(_LONGROPE, length=512, layout="interleaved"),    # long factors
    dict(_LONGROPE, length=10, offset=300),               # long by its offset alone
    dict(head_dim=112, layout="interleaved", length=100),
    dict(head_dim=192, rotary_dim=64, length=100, kv_heads=1),   # DeepSeek: 64 rotated of 192
]

#: Conventions checked in every other dtype.
_EVERY_DTYPE: list[dict] = [
    dict(),
    dict(layout="interleaved", rotary_dim=32),
    dict(length=64, offset=4000),                         # float16 positions inexact past 2048
    dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64, layout="interleaved"),
    dict(rope_type="llama3", factor=8.0, original_max_position_embeddings=8192, base=500000.0),
]

#: Apply's forms (each in every dtype, the first three in quick runs): k with fewer heads than q
#: (down to one), sequence-first q and k, position ids per sequence, a head_dim that is not a
#: power of two with partial rotary (Phi-2: 80, 32 rotated) and one without (96).
_FORMS: list[dict] = [
    dict(qk_layout="bshd", kv_heads=1),
    dict(position_ids="batch", kv_heads=2, length=100, offset=3000),
    dict(head_dim=80, rotary_dim=32, qk_layout="bshd", position_ids="batch", length=100),
    dict(head_dim=96, length=100),
]

_QUICK = 6


def _spec(dtype: str, fields: dict) -> RotarySpec:
    return RotarySpec(**{"length": 300, "head_dim": 64, "dtype": dtype, **fields})


def rotary_cases(quick: bool = False, n_random: int = 4, seed: int = 0) -> list[RotarySpec]:
    """Every case; implementations skip what they do not support."""
    specs = [_spec("float32", fields) for fields in _FLOAT32[: _QUICK if quick else None]]
    for dtype in DTYPES:
        if dtype != "float32":
            specs.extend(_spec(dtype, fields) for fields in _EVERY_DTYPE[: 2 if quick else None])
        specs.extend(_spec(dtype, fields) for fields in _FORMS[: 3 if quick else None])
    if not quick:
        specs.extend(random_specs(n_random, seed))
    return specs


def random_specs(n: int, seed: int = 0) -> list[RotarySpec]:
    """Seeded small specs of the unscaled and linear conventions, any dtype and layout."""
    rng = random.Random(seed)
    specs = []
    for _ in range(n):
        head_dim = 2 * rng.randint(1, 48)
        fields = dict(length=rng.randint(1, 400), head_dim=head_dim,
                      rotary_dim=2 * rng.randint(1, head_dim // 2), base=rng.choice([100.0, 1e4, 1e6]),
                      layout=rng.choice(LAYOUTS), offset=rng.choice([0, 0, 7, 5000]),
                      dtype=rng.choice(DTYPES))
        if rng.random() < 0.5:
            fields.update(rope_type="linear", factor=rng.choice([0.5, 2.0, 8.0]))
        specs.append(RotarySpec(**fields))
    return specs
