"""The angle-addition identity, shared by the fast implementations (registers nothing).

Every output column c holds g_c(theta) with theta = (p + offset) * w_c, where
g_c = a_c sin + b_c cos: (a, b) = (1, 0) for a sin column, (0, 1) for cos, (0, 0)
for padding. Splitting a position into a block start and a row within the block,
p + offset = s + j, and writing g' = a cos - b sin (so g'' = -g):

    g(s w + j w) = g(s w) cos(j w) + g'(s w) sin(j w)

so a table is two multiply-adds per element from four small float64 tables:
P = g(s w), Q = g'(s w) per block start, X = cos(j w), Y = sin(j w) per row of
a block. No transcendental per element, and no large angle is ever rounded to
the output dtype: the error is the rounding of those tables plus one or two
roundings of the result (see docs/fast.md for the measured figures).

Working per column (not per frequency) makes every convention the same kernel:
layout, cos_first, odd 'pad' and 'extend' only change w, a, b.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import Spec
from harness.reference import column_plan, inv_freq

Arange = Callable[[int], Any]   # n -> float64 [0, 1, ..., n-1] in the caller's array library


@dataclass(frozen=True)
class ColumnSteps:
    """Per output column: frequency index, angle per position, sin/cos coefficients.

    `w` is indexed by frequency ([n_freq]); `freq`, `a`, `b` by column ([d_model]).
    Padding columns point at frequency 0 with a = b = 0.
    """

    w: np.ndarray
    freq: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @property
    def column_w(self) -> np.ndarray:
        """Angle per position of each column, [d_model]."""
        return self.w[self.freq]

    @property
    def select(self) -> tuple[np.ndarray, np.ndarray]:
        """Where g and g' of each column sit in concat([sin, cos, -sin, 0]) (see to_columns)."""
        n = self.w.size
        is_sin, is_cos = self.a != 0, self.b != 0
        pad = np.full(self.freq.size, 3 * n)
        g = np.where(is_sin, self.freq, np.where(is_cos, n + self.freq, pad))
        dg = np.where(is_sin, n + self.freq, np.where(is_cos, 2 * n + self.freq, pad))
        return g, dg


def column_steps(spec: Spec) -> ColumnSteps:
    """The Spec's convention as per-column coefficients, from the shared column plan."""
    plan = column_plan(spec)
    d = spec.d_model
    freq = np.zeros(d, dtype=np.int64)
    a, b = np.zeros(d), np.zeros(d)
    sin_coef, cos_coef = (b, a) if spec.cos_first else (a, b)
    freq[plan.first_cols], sin_coef[plan.first_cols] = plan.first_freq, 1.0
    freq[plan.second_cols], cos_coef[plan.second_cols] = plan.second_freq, 1.0
    # scale is folded into the step: one rounding (<= 1 ulp of the angle) instead of two
    return ColumnSteps(spec.scale * inv_freq(spec), freq, a, b)


def sincos_rows(xp: Any, arange: Arange, start: float, step: float, count: int, w: Any):
    """sin and cos of (start + i * step) * w for i < count: two arrays [count, len(w)].

    Two-level angle addition, i = q * m + r with m = ceil(sqrt(count)): 2 * sqrt(count)
    rows of direct float64 sin/cos instead of `count`, for ~2 ulp (float64) more error.
    `xp` is numpy, torch or tensorflow: all three spell sin, cos, reshape and broadcasting alike.
    """
    m = max(1, math.isqrt(max(count - 1, 0)) + 1)
    nq = -(-count // m)
    coarse = (start + (step * m) * arange(nq))[:, None] * w
    fine = (step * arange(m))[:, None] * w
    sc, cc, sf, cf = xp.sin(coarse), xp.cos(coarse), xp.sin(fine), xp.cos(fine)
    s = sc[:, None] * cf + cc[:, None] * sf
    c = cc[:, None] * cf - sc[:, None] * sf
    shape = (nq * m, w.shape[0])
    return xp.reshape(s, shape)[:count], xp.reshape(c, shape)[:count]


def to_columns(xp: Any, sin: Any, cos: Any, select: tuple, take: Callable):
    """Per-frequency sin/cos rows -> per-column (g, g') rows, in any array library.

    A pure selection (no arithmetic, so exact in any dtype: cast first, select after).
    `select` is ColumnSteps.select in the library of `sin`; `take(x, index)` gathers
    columns into a row-major result (np.take(..., axis=1), torch.index_select(x, 1, ...),
    tf.gather(..., axis=1); NumPy's x[:, index] would come out column-major).
    """
    source = xp.concat([sin, cos, -sin, sin[:, :1] * 0], axis=1)
    return take(source, select[0]), take(source, select[1])


