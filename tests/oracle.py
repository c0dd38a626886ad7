"""An oracle for the sinusoidal table that shares no code with what it judges.

The reference (harness.core.reference), the tolerance and the fast implementations
each place columns and compute frequencies; if they shared that code with their
test, one mistake would be in all of them and invisible. So this module writes
the published formulas down again, on its own:

    inv_freq_k = base ** (-k / (H - freq_shift))    H = d/2 for odd 'extend', else d // 2
    angle      = scale * (p + offset) * inv_freq_k
    columns    interleaved: f0 g0 f1 g1 ...   concat: f0 f1 ... g0 g1 ...
               (f, g) = (sin, cos), or (cos, sin) with cos_first; an odd width
               ends in a zero column ('pad') or one more f ('extend', at the end
               of the f block in concat)

It reads a Spec only as a record of its fields (none of its derived properties:
`n_freq` and `denominator` are code under test too), imports nothing else from
the harness, and evaluates in mpmath at 50 digits. tests/test_oracle.py checks
it against values worked by hand.
"""

from __future__ import annotations

import mpmath
import numpy as np

DIGITS = 50
SIN, COS, ZERO = "sin", "cos", "zero"


def column_roles(spec) -> list[tuple[str, int]]:
    """(function, frequency index) of every column, in order; ("zero", -1) for padding."""
    d, pairs = spec.d_model, spec.d_model // 2
    f, g = (COS, SIN) if spec.cos_first else (SIN, COS)
    extra = d % 2 == 1 and spec.odd == "extend"
    pad = [(ZERO, -1)] if d % 2 == 1 and spec.odd == "pad" else []
    if spec.layout == "interleaved":
        roles = [role for k in range(pairs) for role in ((f, k), (g, k))]
        return roles + ([(f, pairs)] if extra else []) + pad
    n_f = pairs + 1 if extra else pairs
    return [(f, k) for k in range(n_f)] + [(g, k) for k in range(pairs)] + pad


def inverse_frequency(spec, k: int) -> mpmath.mpf:
    """base ** (-k / (H - freq_shift)), to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        d = mpmath.mpf(spec.d_model)
        h = d / 2 if spec.odd == "extend" else mpmath.floor(d / 2)
        return mpmath.power(mpmath.mpf(spec.base), -mpmath.mpf(k) / (h - mpmath.mpf(spec.freq_shift)))


def angle(spec, row: int, k: int) -> mpmath.mpf:
    """The angle of frequency k at table row `row` (position row + offset)."""
    with mpmath.workdps(DIGITS):
        return mpmath.mpf(spec.scale) * (row + spec.offset) * inverse_frequency(spec, k)


def element(spec, row: int, col: int) -> mpmath.mpf:
    """The table's element [row, col], to DIGITS digits."""
    fn, k = column_roles(spec)[col]
    if fn == ZERO:
        return mpmath.mpf(0)
    with mpmath.workdps(DIGITS):
        return (mpmath.sin if fn == SIN else mpmath.cos)(angle(spec, row, k))


def table(spec) -> np.ndarray:
    """The whole table in float64 (each element correctly rounded): for small tables only."""
    out = np.zeros((spec.length, spec.d_model))
    roles = column_roles(spec)
    with mpmath.workdps(DIGITS):
        inv = {k: inverse_frequency(spec, k) for fn, k in roles if fn != ZERO}
        for col, (fn, k) in enumerate(roles):
            if fn == ZERO:
                continue
            func = mpmath.sin if fn == SIN else mpmath.cos
            for row in range(spec.length):
                out[row, col] = float(func(mpmath.mpf(spec.scale) * (row + spec.offset) * inv[k]))
    return out


def column_frequencies(spec) -> np.ndarray:
    """scale * inv_freq of every column's frequency (0 for padding), float64 [d_model]."""
    with mpmath.workdps(DIGITS):
        return np.array([0.0 if fn == ZERO else float(mpmath.mpf(spec.scale) * inverse_frequency(spec, k))
                         for fn, k in column_roles(spec)])


def labels(spec) -> str:
    """The roles as short text ("s0 c0 s1 c1 0"): what the hand-worked tests compare."""
    short = {SIN: "s", COS: "c"}
    return " ".join("0" if fn == ZERO else f"{short[fn]}{k}" for fn, k in column_roles(spec))
