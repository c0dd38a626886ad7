"""Where a rotary cache keeps each frequency, and float64 angle-addition tables (registers nothing).

Both layouts hold every frequency twice: "half" in columns f and f + n_freq, "interleaved" in
2f and 2f + 1. So a cache is its n_freq distinct columns written twice, and a rotation pairs
x[first] with x[second] (`pair_slices`) whatever the layout:

    out[first]  = x[first] c - x[second] s        out[second] = x[second] c + x[first] s

The fast builders never round a large angle: position i = offset + q m + r (m ~ sqrt(length))
is reached by angle addition from two small float64 tables, cos/sin at each coarse step
(offset + q m) w and at each fine step r w, the latter times attention_scaling:

    a cos(A + B) = cos A (a cos B) - sin A (a sin B)    a sin(A + B) = sin A (a cos B) + cos A (a sin B)

That is ~2 sqrt(length) n_freq float64 sin/cos instead of length x rot, and ~2 ulp of float64
error at any position (the table's own implementations in fast_tables.py use the same identity
per column; rotary needs it per frequency, with the scale folded in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np


def pair_slices(spec: Any) -> tuple[slice, slice]:
    """The two column sets of a rotated head that each hold every frequency once, in order."""
    n = spec.n_freq
    if spec.layout == "half":
        return slice(0, n), slice(n, spec.rot)
    return slice(0, spec.rot, 2), slice(1, spec.rot, 2)


def work_dtype(spec: Any) -> str:
    """The dtype model code computes a cache in: float32, or float64 for a float64 spec."""
    return "float64" if spec.dtype == "float64" else "float32"


@dataclass(frozen=True)
class SplitTables:
    """float64 cos/sin at every coarse step `[n_coarse, n_freq]` and, scaled, at every fine step
    `[step, n_freq]`: position offset + q step + r is coarse row q and fine row r."""

    step: int
    cos_coarse: np.ndarray
    sin_coarse: np.ndarray
    cos_fine: np.ndarray
    sin_fine: np.ndarray

    def cast(self, dtype: Any) -> tuple[np.ndarray, ...]:
        """(cos_coarse, sin_coarse, cos_fine, sin_fine) in `dtype`, C-contiguous."""
        return tuple(np.ascontiguousarray(t, dtype=dtype) for t in
                     (self.cos_coarse, self.sin_coarse, self.cos_fine, self.sin_fine))


def split_tables(spec: Any, step: Optional[int] = None) -> SplitTables:
    """The angle-addition tables of a spec's positions (setup work: O(sqrt(length) n_freq)
    sin/cos; with a given `step`, O(length / step) coarse rows)."""
    if step is not None and step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    w = spec.inv_freq()
    step = max(1, math.isqrt(spec.length - 1) + 1) if step is None else step
    n_coarse = -(-spec.length // step)
    coarse = (spec.offset + step * np.arange(n_coarse, dtype=np.float64))[:, None] * w[None, :]
    fine = np.arange(step, dtype=np.float64)[:, None] * w[None, :]
    scale = spec.attention_scaling
    return SplitTables(step, np.cos(coarse), np.sin(coarse),
                       scale * np.cos(fine), scale * np.sin(fine))
