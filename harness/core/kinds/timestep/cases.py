"""Verify's timestep cases, the named conventions, and the spec bench times.

Cheap on purpose (every registered timestep implementation runs them all): DDPM's and
guided-diffusion's schedules, the smallest widths each allows, odd widths, fractional and
large timesteps, scale 1000 on t in [0, 1) (AuraFlow, Qwen-Image), another max_period, each
in every dtype, one embedding of a million elements, and seeded random specs.
"""

from __future__ import annotations

import random
from typing import Any

from harness.core.kinds.timestep.spec import TimestepSpec
from harness.core.kinds.fields import DTYPES
from harness.util.exitcodes import UsageError

#: Named conventions (spec fields), the first the default bench times. diffusers' Timesteps
#: module takes (flip_sin_to_cos, downscale_freq_shift, scale); its function's defaults are
#: DDPM's; most current models (SD 1.x-3, SDXL, Flux, PixArt, Wan) use guided-diffusion's.
CONVENTIONS: dict[str, dict[str, Any]] = {
    "adm": {"freq_shift": 0.0, "cos_first": True},           # guided-diffusion; flip, shift 0
    "ddpm": {"freq_shift": 1.0, "cos_first": False},         # get_timestep_embedding's defaults
    "ddpm-flip": {"freq_shift": 1.0, "cos_first": True},     # Timesteps(flip=True, shift=1)
    "sin-first": {"freq_shift": 0.0, "cos_first": False},    # Timesteps(flip=False, shift=0)
    "adm-scale1000": {"freq_shift": 0.0, "cos_first": True, "scale": 1000.0},  # AuraFlow, Qwen-Image
}

#: The span of angles bench's timesteps cover: [0, 1000) rad, t in [0, 1000 / scale).
BENCH_ANGLE_SPAN = 1000.0

_ADM = CONVENTIONS["adm"]
#: (how the timesteps are drawn, count, dim, t_max, other fields), each in every dtype
_PER_DTYPE: list[tuple[str, int, int, float, dict[str, Any]]] = [
    ("uniform", 64, 320, 1000.0, {}),                                  # DDPM, SD's 320 channels
    ("uniform", 64, 320, 1000.0, _ADM),
    ("random", 1, 4, 1000.0, {}),                                      # shift 1: dim >= 4
    ("random", 8, 2, 1000.0, {"freq_shift": 0.0}),                     # one frequency
    ("random", 33, 33, 1000.0, {}),                                    # odd width: zero column
    ("random", 17, 257, 1000.0, _ADM),
    ("uniform", 32, 256, 1.0, CONVENTIONS["adm-scale1000"]),
    ("random", 16, 128, 50.0, {"max_period": 1000.0, "freq_shift": 0.5}),
]
_QUICK_PER_DTYPE = 4
#: dtype-specific extras: one embedding of a million elements, and timesteps out to 1e6
_EXTRA: list[tuple[str, int, int, float, dict[str, Any]]] = [
    ("uniform", 256, 4096, 1000.0, {"dtype": "float32"}),
    ("random", 64, 512, 1e6, {"dtype": "float64"}),
    ("random", 64, 512, 1e6, {"dtype": "float32", **_ADM}),
]


def _make(spread: str, count: int, dim: int, t_max: float, fields: dict[str, Any],
          seed: int = 0) -> TimestepSpec:
    if spread == "uniform":
        return TimestepSpec.uniform(count, dim, t_max=t_max, **fields)
    return TimestepSpec.random(count, dim, seed=seed, t_max=t_max, **fields)


def timestep_cases(quick: bool = False, n_random: int = 8, seed: int = 0) -> list[TimestepSpec]:
    """Every case, the per-dtype ones in every dtype; implementations skip what they do not
    support."""
    chosen = _PER_DTYPE[:_QUICK_PER_DTYPE] if quick else _PER_DTYPE
    specs = [_make(spread, count, dim, t_max, {**fields, "dtype": dtype}, seed=i)
             for dtype in DTYPES for i, (spread, count, dim, t_max, fields) in enumerate(chosen)]
    if not quick:
        specs += [_make(*case, seed=100 + i) for i, case in enumerate(_EXTRA)]
        specs += random_timestep_specs(n_random, seed)
    return specs


def random_timestep_specs(n: int, seed: int = 0) -> list[TimestepSpec]:
    """Seeded random specs over every field, small sizes."""
    rng = random.Random(seed)
    return [_random_spec(rng) for _ in range(n)]


#: The largest angles (scale x t, radians) random cases reach: models' spans (t < 1000 at scale
#: 1, t < 1 at scale 1000) and four times past. Drawn apart from the scale: t up to 4000 at scale
#: 1000 is 4e6 rad, past what the float32 contract can bound (MAX_ANGLE_ERROR), and failed every
#: honest float32 implementation on the draws that made it.
RANDOM_ANGLE_SPANS = (1.0, 1000.0, 4000.0)


def _random_spec(rng: random.Random) -> TimestepSpec:
    dim = rng.randrange(2, 600)
    shifts = [s for s in (0.0, 1.0, rng.uniform(-2.0, 1.0)) if s < dim // 2]
    count, seed = rng.randrange(1, 200), rng.randrange(1 << 30)
    span = rng.choice(RANDOM_ANGLE_SPANS)
    max_period = rng.choice([10000.0, 10000.0, rng.uniform(2.0, 1e5)])
    freq_shift, cos_first = rng.choice(shifts), rng.random() < 0.5
    scale = rng.choice([1.0, 1.0, 1000.0, rng.uniform(0.1, 10.0)])
    return TimestepSpec.random(count=count, dim=dim, seed=seed, t_max=span / scale,
                               max_period=max_period, freq_shift=freq_shift, cos_first=cos_first,
                               scale=scale, dtype=rng.choice(["float32", "float64"]))


def bench_spec(length: int, width: int, dtype: str, convention: str) -> TimestepSpec:
    """`length` timesteps spread evenly so that their angles span [0, 1000) rad, width `width`."""
    try:
        fields = CONVENTIONS[convention]
    except KeyError:
        raise UsageError(f"convention must be one of {sorted(CONVENTIONS)}, got {convention!r}") from None
    t_max = BENCH_ANGLE_SPAN / fields.get("scale", 1.0)
    return TimestepSpec.uniform(length, width, t_max=t_max, dtype=dtype, **fields)
