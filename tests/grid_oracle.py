"""An oracle for the 2-D/3-D sincos grid that shares no code with what it judges.

It writes the published construction down again, in mpmath at 50 digits, reading a GridSpec
only as a record of its fields (none of its derived properties: `widths`, `rows`, `rescale`
are code under test too) and importing nothing of the harness:

    width_a    = d_model * split[a] / sum(split)            (split None: equal shares)
    position   = (i + start) * (base_size / n if base_size else 1) / interpolation_scale[a]
                 or, normalized, (i + start) / (n + norm_eps) * norm_scale
    inv_freq_k = base ** (-k / (width_a / 2 - freq_shift))
    row        = extra + r, r = ((t * H) + y) * W + x; rows before `extra` are zero
    columns    axis blocks in axis_order; in a block sin_0..sin_h-1 cos_0.. (concat) or
               sin_0 cos_0 sin_1 .. (interleaved); function_major: every axis's sin block in
               axis_order, then every axis's cos block; cos_first swaps sin and cos
"""

from __future__ import annotations

import mpmath
import numpy as np

DIGITS = 50
SIN, COS = "sin", "cos"


def _ndim(spec) -> int:
    return len(spec.grid)


def axis_widths(spec) -> list[int]:
    shares = list(spec.split) if spec.split is not None else [1] * _ndim(spec)
    total = sum(shares)
    assert all(spec.d_model * s % total == 0 for s in shares)
    return [spec.d_model * s // total for s in shares]


def _order(spec) -> list[int]:
    return list(spec.axis_order) if spec.axis_order is not None else list(range(_ndim(spec)))


def column_roles(spec) -> list[tuple[str, int, int]]:
    """(function, axis, frequency index) of every column, in order."""
    f, g = (COS, SIN) if spec.cos_first else (SIN, COS)
    widths = axis_widths(spec)
    if spec.layout == "function_major":
        return ([(f, a, k) for a in _order(spec) for k in range(widths[a] // 2)]
                + [(g, a, k) for a in _order(spec) for k in range(widths[a] // 2)])
    roles = []
    for a in _order(spec):
        half = widths[a] // 2
        if spec.layout == "concat":
            roles += [(f, a, k) for k in range(half)] + [(g, a, k) for k in range(half)]
        else:
            roles += [role for k in range(half) for role in ((f, a, k), (g, a, k))]
    return roles


def position(spec, axis: int, i: int) -> mpmath.mpf:
    """The coordinate of index i along `axis`, to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        n = mpmath.mpf(spec.grid[axis])
        value = mpmath.mpf(i) + mpmath.mpf(spec.start)
        if spec.coords == "normalized":
            return value / (n + mpmath.mpf(spec.norm_eps)) * mpmath.mpf(spec.norm_scale)
        if spec.base_size is not None:
            value = value / (n / mpmath.mpf(spec.base_size))
        scales = spec.interpolation_scale
        scale = 1 if scales is None else scales if not isinstance(scales, (tuple, list)) else scales[axis]
        return value / mpmath.mpf(scale)


def inverse_frequency(spec, axis: int, k: int) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        half = mpmath.mpf(axis_widths(spec)[axis]) / 2
        return mpmath.power(mpmath.mpf(spec.base), -mpmath.mpf(k) / (half - mpmath.mpf(spec.freq_shift)))


def grid_point(spec, r: int) -> list[int]:
    """The grid indices of cell r (row-major, the last axis fastest)."""
    point = []
    for n in reversed(spec.grid):
        point.append(r % n)
        r //= n
    return point[::-1]


def element(spec, row: int, col: int) -> mpmath.mpf:
    """The table's element [row, col], to DIGITS digits."""
    if row < spec.extra:
        return mpmath.mpf(0)
    fn, axis, k = column_roles(spec)[col]
    i = grid_point(spec, row - spec.extra)[axis]
    with mpmath.workdps(DIGITS):
        theta = position(spec, axis, i) * inverse_frequency(spec, axis, k)
        return (mpmath.sin if fn == SIN else mpmath.cos)(theta)


def table(spec) -> np.ndarray:
    """The whole table in float64 (each element correctly rounded): for small tables only."""
    roles = column_roles(spec)
    cells = int(np.prod(spec.grid))
    out = np.zeros((spec.extra + cells, spec.d_model))
    values: dict[tuple[str, int, int, int], float] = {}
    with mpmath.workdps(DIGITS):
        for r in range(cells):
            point = grid_point(spec, r)
            for col, (fn, axis, k) in enumerate(roles):
                key = (fn, axis, k, point[axis])
                if key not in values:
                    theta = position(spec, axis, point[axis]) * inverse_frequency(spec, axis, k)
                    values[key] = float((mpmath.sin if fn == SIN else mpmath.cos)(theta))
                out[spec.extra + r, col] = values[key]
    return out
