"""What every grid implementation needs before it computes: each axis's positions and
frequencies (float64, O(h + w + d), built in the untimed setup) and where each axis's block goes.

The implementations' own placement, written apart from the reference's column plan
(harness/core/kinds/grid/plan.py), so a mistake on either side shows up in verify.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.kinds.grid import GridSpec


@dataclass(frozen=True)
class Segment:
    """Columns `local : local + length` of axis `axis`'s own table go to output columns
    `out : out + length`."""

    axis: int
    out: int
    local: int
    length: int


def positions(spec: GridSpec) -> list[np.ndarray]:
    """Per axis, the float64 coordinate of each index."""
    result = []
    for axis, n in enumerate(spec.grid):
        index = np.arange(n, dtype=np.float64) + spec.start
        if spec.coords == "normalized":
            result.append(index / (n + spec.norm_eps) * spec.norm_scale)
        else:
            step = n / spec.base_size if spec.base_size else 1.0
            result.append(index / step / spec.interpolation_scale[axis])
    return result


def frequencies(spec: GridSpec) -> list[np.ndarray]:
    """Per axis, the float64 inverse frequencies 1 / base ** (k / (width / 2 - freq_shift))."""
    halves = [w // 2 for w in spec.widths]
    return [1.0 / spec.base ** (np.arange(h, dtype=np.float64) / (h - spec.freq_shift)) for h in halves]


def segments(spec: GridSpec) -> tuple[Segment, ...]:
    """Where each axis's own table lands. An axis's table is [n, width]: its sin/cos pairs side by
    side for the interleaved layout, else its first function's block then its second's."""
    halves = [w // 2 for w in spec.widths]
    if spec.layout != "function_major":
        starts = np.cumsum([0] + [2 * halves[a] for a in spec.axis_order])
        return tuple(Segment(a, int(s), 0, 2 * halves[a]) for a, s in zip(spec.axis_order, starts))
    starts = np.cumsum([0] + [halves[a] for a in spec.axis_order])
    first = [Segment(a, int(s), 0, halves[a]) for a, s in zip(spec.axis_order, starts)]
    second = [Segment(a, spec.d_model // 2 + int(s), halves[a], halves[a])
              for a, s in zip(spec.axis_order, starts)]
    return tuple(first + second)


def functions(spec: GridSpec) -> tuple[str, str]:
    """The names of the first and second function of every pair."""
    return ("cos", "sin") if spec.cos_first else ("sin", "cos")
