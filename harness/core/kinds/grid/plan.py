"""Where each axis's sin and cos land, and the float64 positions and frequencies of each axis.

Read by the reference and the tolerance (implementations place their own columns, so a
placement mistake on either side shows up in verify); tested against tests/grid_oracle.py,
which writes the placement again from the spec's fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.kinds.grid.spec import GridSpec


@dataclass(frozen=True)
class AxisColumns:
    """Axis `axis`'s output columns: `first[k]` holds the first function (sin, or cos if
    cos_first) of its frequency k, `second[k]` the other."""

    axis: int
    first: np.ndarray
    second: np.ndarray


def column_plan(spec: GridSpec) -> tuple[AxisColumns, ...]:
    """One entry per grid axis, in grid order."""
    halves = [w // 2 for w in spec.widths]
    plan: dict[int, AxisColumns] = {}
    offset = 0
    for axis in spec.axis_order:
        k = np.arange(halves[axis])
        if spec.layout == "function_major":
            plan[axis] = AxisColumns(axis, offset + k, spec.d_model // 2 + offset + k)
            offset += halves[axis]
        elif spec.layout == "concat":
            plan[axis] = AxisColumns(axis, offset + k, offset + halves[axis] + k)
            offset += 2 * halves[axis]
        else:
            plan[axis] = AxisColumns(axis, offset + 2 * k, offset + 2 * k + 1)
            offset += 2 * halves[axis]
    return tuple(plan[axis] for axis in range(spec.ndim))


def positions(spec: GridSpec, axis: int) -> np.ndarray:
    """float64 positions of axis `axis`: (i + start) * rescale."""
    return (np.arange(spec.grid[axis], dtype=np.float64) + spec.start) * spec.rescale[axis]


def inv_freq(spec: GridSpec, axis: int) -> np.ndarray:
    """float64 frequencies of axis `axis`: base ** (-k / (width / 2 - freq_shift))."""
    half = spec.widths[axis] // 2
    return np.power(spec.base, -np.arange(half, dtype=np.float64) / (half - spec.freq_shift))


def angles(spec: GridSpec, axis: int) -> np.ndarray:
    """float64 angles of axis `axis`, [grid[axis], widths[axis] / 2]."""
    return positions(spec, axis)[:, None] * inv_freq(spec, axis)[None, :]


def along(spec: GridSpec, axis: int, values: np.ndarray) -> np.ndarray:
    """[n, c] values of one axis shaped to broadcast over the grid's cells [*grid, c]."""
    shape = [1] * spec.ndim + [values.shape[1]]
    shape[axis] = values.shape[0]
    return values.reshape(shape)
