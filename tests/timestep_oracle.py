"""An oracle for diffusion timestep embeddings that shares no code with what it judges.

The published formula (DDPM's `get_timestep_embedding`, diffusers', guided-diffusion's
`timestep_embedding`), written down again on its own:

    half   = dim // 2
    freq_k = exp(-ln(max_period) * k / (half - freq_shift))     k = 0 .. half-1
    angle  = scale * t * freq_k
    row    f(angle_0) .. f(angle_{half-1}) g(angle_0) .. g(angle_{half-1}) [0 when dim is odd]
           (f, g) = (sin, cos), or (cos, sin) when cos_first (flip_sin_to_cos)

It reads a spec only as a record of its fields (timesteps, dim, max_period, freq_shift,
cos_first, scale; none of its derived properties, which are code under test too), imports
nothing from the harness, and evaluates in mpmath at 50 digits. tests/test_timestep.py checks
it against values worked by hand.
"""

from __future__ import annotations

from typing import Optional, Sequence

import mpmath
import numpy as np

DIGITS = 50
SIN, COS, ZERO = "sin", "cos", "zero"


def column_roles(spec) -> list[tuple[str, int]]:
    """(function, frequency index) of every column, in order; ("zero", -1) for the padding."""
    pairs = spec.dim // 2
    f, g = (COS, SIN) if spec.cos_first else (SIN, COS)
    pad = [(ZERO, -1)] if spec.dim % 2 == 1 else []
    return [(f, k) for k in range(pairs)] + [(g, k) for k in range(pairs)] + pad


def frequency(spec, k: int) -> mpmath.mpf:
    """exp(-ln(max_period) k / (dim // 2 - freq_shift)), to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        pairs = mpmath.mpf(spec.dim // 2)
        return mpmath.exp(-mpmath.log(mpmath.mpf(spec.max_period)) * k
                          / (pairs - mpmath.mpf(spec.freq_shift)))


def angle(spec, row: int, k: int) -> mpmath.mpf:
    """The angle of frequency k for the row-th timestep."""
    with mpmath.workdps(DIGITS):
        return mpmath.mpf(spec.scale) * mpmath.mpf(spec.timesteps[row]) * frequency(spec, k)


def element(spec, row: int, col: int) -> mpmath.mpf:
    """The embedding's element [row, col], to DIGITS digits."""
    fn, k = column_roles(spec)[col]
    if fn == ZERO:
        return mpmath.mpf(0)
    with mpmath.workdps(DIGITS):
        return (mpmath.sin if fn == SIN else mpmath.cos)(angle(spec, row, k))


def embedding(spec, rows: Optional[Sequence[int]] = None,
              cols: Optional[Sequence[int]] = None) -> np.ndarray:
    """The embedding (or the given rows and columns of it), rounded once to float64."""
    rows = range(len(spec.timesteps)) if rows is None else rows
    cols = range(spec.dim) if cols is None else cols
    return np.array([[float(element(spec, r, c)) for c in cols] for r in rows], dtype=np.float64)


def angles(spec, rows: Sequence[int], cols: Sequence[int]) -> np.ndarray:
    """|angle| of each given element's frequency (0 for padding), rounded to float64."""
    roles = column_roles(spec)
    return np.array([[0.0 if roles[c][0] == ZERO else float(abs(angle(spec, r, roles[c][1])))
                      for c in cols] for r in rows], dtype=np.float64)
