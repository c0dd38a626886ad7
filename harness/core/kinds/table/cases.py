"""The verify case matrix: the conventions and sizes every implementation is checked on.

Short and long tables (past 1 000 positions, out to 262 144), widths 2 .. 2048,
every dtype, a base other than 10000, offsets, both layouts and schedules, the
odd-width policies, cos_first and scale, plus seeded random specs. Each
implementation runs the cases it `supports`; the rest are recorded as skips.
"""

from __future__ import annotations

import random

from harness.core.kinds.table.spec import DTYPES, Spec

#: A case reaching this many positions is "long": the report quotes accuracy out there.
LONG_POSITIONS = 100_000
_SHAPES_QUICK = [(1, 2), (10, 6), (128, 64), (1500, 128)]
_SHAPES_FULL = _SHAPES_QUICK + [(2, 1024), (1024, 1024), (64, 2048), (4096, 64), (262_144, 8)]

_CONVENTIONS: list[dict] = [
    dict(base=500.0),
    dict(offset=2),
    dict(offset=1_000_000, length=64),
    dict(freq_shift=1),
    dict(layout="concat"),
    dict(layout="concat", freq_shift=1),
    dict(layout="concat", freq_shift=1, offset=2, base=1000.0),
    dict(cos_first=True),
    dict(cos_first=True, layout="concat", freq_shift=1),
    dict(cos_first=True, layout="concat"),
    dict(layout="concat", freq_shift=1, offset=2),
    dict(d_model=33, odd="pad", layout="concat", freq_shift=1),
    dict(d_model=33, odd="pad"),
    dict(d_model=33, odd="extend"),
    dict(scale=1000.0, layout="concat", freq_shift=1, length=100),
    dict(layout="concat", length=262_144, d_model=8),
    # offset 2 (fairseq's padding_idx 1) and cos_first (guided-diffusion) change nothing for the
    # general implementations, and give the narrow library conventions long and odd cases too
    dict(layout="concat", freq_shift=1, offset=2, length=262_144, d_model=8),
    dict(cos_first=True, layout="concat", length=262_144, d_model=8),
    dict(d_model=33, odd="pad", layout="concat", freq_shift=1, offset=2),
    dict(d_model=33, odd="pad", layout="concat", cos_first=True, offset=5),
    dict(d_model=33, odd="extend", layout="concat", offset=7),   # Marian with past keys
]


def default_cases(quick: bool = False, n_random: int = 8, seed: int = 0) -> list[Spec]:
    """Every case, each in every dtype; implementations skip what they do not support."""
    specs: list[Spec] = []
    for dtype in DTYPES:
        for length, d_model in _SHAPES_QUICK if quick else _SHAPES_FULL:
            specs.append(Spec(length, d_model, dtype=dtype))
        for extra in _CONVENTIONS[: 6 if quick else None]:
            fields = {"length": 300, "d_model": 64, **extra}
            specs.append(Spec(dtype=dtype, **fields))
    if not quick:
        specs.extend(random_specs(n_random, seed))
    return specs


def random_specs(n: int, seed: int = 0) -> list[Spec]:
    """Seeded random specs over every field, moderate sizes."""
    rng = random.Random(seed)
    return [_random_spec(rng) for _ in range(n)]


def _random_spec(rng: random.Random) -> Spec:
    odd = rng.choice(["error", "pad", "extend"])
    d_model = rng.randrange(4, 400)
    if odd == "error":
        d_model += d_model % 2
    return Spec(
        length=rng.choice([rng.randrange(1, 64), rng.randrange(64, 3000)]),
        d_model=d_model,
        base=rng.choice([10000.0, 10000.0, rng.uniform(50.0, 1e5)]),
        layout=rng.choice(["interleaved", "concat"]),
        freq_shift=rng.choice([0, 1]),
        offset=rng.choice([0, 0, 1, 2, rng.randrange(0, 5000)]),
        dtype=rng.choice(["float32", "float64"]),
        cos_first=rng.random() < 0.25,
        odd=odd,
        scale=rng.choice([1.0, 1.0, 1.0, rng.uniform(0.5, 100.0)]),
    )
