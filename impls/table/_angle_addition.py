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
layout, cos_first, odd 'pad' and 'extend' only change w, a, b. The columns and
frequencies are worked out here from the Spec, not taken from the reference's
column plan, so that a placement mistake on either side shows in verify instead
of being shared (tests/test_oracle_placement.py checks both against the oracle).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import Spec

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
    """The Spec's convention as per-column coefficients.

    Interleaved: column c holds frequency c // 2, the second function on odd c (an
    'extend' column, c = d - 1, is even: the first function). Concat: the first
    n_freq columns hold the first function, the rest the second.
    """
    d, n = spec.d_model, spec.n_freq
    col = np.arange(d)
    if spec.layout == "interleaved":
        freq, second = col // 2, col % 2 == 1
    else:
        second = col >= n
        freq = np.where(second, col - n, col)
    live = ~((spec.odd == "pad") & (d % 2 == 1) & (col == d - 1))
    is_cos = second != spec.cos_first
    a = np.where(live & ~is_cos, 1.0, 0.0)
    b = np.where(live & is_cos, 1.0, 0.0)
    k = np.arange(n, dtype=np.float64)
    # scale is folded into the step: one rounding (<= 1 ulp of the angle) instead of two
    w = spec.scale * np.power(spec.base, -k / spec.denominator)
    return ColumnSteps(w, np.where(live, freq, 0), a, b)


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


