"""Verify's grid cases: every convention and field variant, 2-D and 3-D, every dtype, cheap.

About thirty specs, the largest about a million elements: every registered grid
implementation runs all of them in tests/test_implementations.py.
"""

from __future__ import annotations

import random

from harness.core.kinds.grid.conventions import CONVENTIONS
from harness.core.kinds.grid.spec import COORDS, LAYOUTS, GridSpec, split_unit
from harness.core.kinds.fields import DTYPES

#: (grid, d_model, dtype, convention) : each named convention on a grid of its own
_NAMED = (
    ((14, 14), 64, "float32", "mae"),
    ((6, 10), 32, "float64", "dit"),
    ((12, 20), 48, "float32", "pixart-1024"),
    ((10, 15), 64, "float32", "detr"),
    ((9, 7), 32, "float64", "deformable-detr"),
    ((8, 8), 32, "float32", "timm-sincos2d"),
    ((3, 4, 5), 32, "float32", "diffusers-3d"),
    ((2, 6, 8), 64, "float64", "cogvideox"),
)
#: (grid, d_model, dtype, fields) : the field variants one at a time, and the edges
_VARIANTS = (
    ((4, 4), 8, "float64", {}),
    ((1, 1), 4, "float32", {}),
    ((1, 7), 12, "float64", {"axis_order": (1, 0), "extra": 2}),
    ((5, 9), 16, "float64", {"layout": "interleaved", "cos_first": True}),
    ((6, 6), 16, "float32", {"layout": "interleaved", "start": 1.0}),
    ((7, 5), 24, "float16", {"layout": "function_major", "cos_first": True, "axis_order": (1, 0)}),
    ((8, 4), 32, "float32", {"split": (8, 24)}),
    ((7, 11), 40, "float64", {"base": 100.0, "freq_shift": 1.0}),
    ((3, 5), 12, "float64", {"extra": 4}),
    ((16, 16), 64, "bfloat16", {"axis_order": (1, 0), "extra": 1}),
    ((20, 30), 128, "float16", {"layout": "interleaved", "coords": "normalized", "start": 1.0,
                                "norm_eps": 1e-6}),
    ((11, 13), 32, "float32", {"coords": "normalized", "norm_scale": 1.0, "start": -0.5}),
    ((4, 4, 4), 12, "float64", {}),
    ((2, 3, 8), 32, "float16", {"layout": "interleaved", "split": (1, 1, 2), "axis_order": (2, 1, 0),
                                "extra": 2}),
    ((2, 3, 4), 24, "bfloat16", {"coords": "normalized", "start": 1.0, "norm_eps": 1e-6}),
    ((5, 3, 2), 36, "float64", {"layout": "function_major", "cos_first": True}),
    ((3, 9, 6), 48, "float32", {"base_size": 4, "interpolation_scale": (0.5, 2.0, 1.5)}),
)
#: (grid, d_model, dtype, convention) : the largest, about a million elements each
_LARGE = (
    ((64, 64), 256, "float32", "mae"),
    ((8, 24, 32), 160, "float32", "diffusers-3d"),
)


def grid_cases(quick: bool = False, n_random: int = 6, seed: int = 0) -> list[GridSpec]:
    """The named conventions, the field variants (quick: the first eight and one of each dtype
    they miss) and (unless quick) the large and seeded random ones: every dtype is covered."""
    specs = [GridSpec(g, d, dtype=t, **CONVENTIONS[c]) for g, d, t, c in _NAMED]
    variants = _VARIANTS[:8] + _first_of_each_dtype(_VARIANTS[8:]) if quick else _VARIANTS
    specs += [GridSpec(g, d, dtype=t, **fields) for g, d, t, fields in variants]
    if not quick:
        specs += [GridSpec(g, d, dtype=t, **CONVENTIONS[c]) for g, d, t, c in _LARGE]
        specs += random_grid_specs(n_random, seed)
    return specs


def _first_of_each_dtype(variants: tuple) -> tuple:
    """The first variant of each dtype that the named cases and the first eight variants leave
    out, so that a --quick verify (bench's post-step) grades every dtype bench times."""
    seen = {t for _, _, t, _ in _NAMED + _VARIANTS[:8]}
    first = {}
    for variant in variants:
        if variant[2] not in seen:
            first.setdefault(variant[2], variant)
    return tuple(first.values())


def random_grid_specs(n: int, seed: int = 0) -> list[GridSpec]:
    """Seeded random specs over every field, small sizes: draws that make no valid spec (a
    freq_shift the narrowest axis cannot take) are drawn again."""
    rng = random.Random(seed)
    specs: list[GridSpec] = []
    while len(specs) < n:
        try:
            specs.append(_random_spec(rng))
        except ValueError:
            continue
    return specs


def _random_spec(rng: random.Random) -> GridSpec:
    ndim = rng.choice((2, 3))
    grid = tuple(rng.randrange(1, 12 if ndim == 2 else 6) for _ in range(ndim))
    split = tuple(rng.randrange(1, 4) for _ in range(ndim))
    unit = split_unit(split)
    order = list(range(ndim))
    rng.shuffle(order)
    coords = rng.choice(COORDS)
    fields = {"coords": coords, "start": rng.choice((0.0, 1.0, 0.5))}
    if coords == "normalized":
        fields.update(norm_eps=rng.choice((0.0, 1e-6)), norm_scale=rng.choice((6.283185307179586, 1.0)))
    else:
        fields.update(base_size=rng.choice((None, rng.randrange(2, 20))),
                      interpolation_scale=tuple(rng.choice((1.0, 0.5, 2.0, 1.875)) for _ in range(ndim)))
    return GridSpec(grid, unit * rng.randrange(1, max(2, 96 // unit)), split=split, axis_order=tuple(order),
                    layout=rng.choice(LAYOUTS), cos_first=rng.random() < 0.3,
                    base=rng.choice((10000.0, 10000.0, rng.uniform(50.0, 1e5))),
                    freq_shift=rng.choice((0.0, 0.0, 1.0)) if unit > 4 else 0.0,
                    extra=rng.choice((0, 0, 1, 3)), dtype=rng.choice(DTYPES), **fields)
