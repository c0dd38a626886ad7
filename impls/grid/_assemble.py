"""The two grid designs, written once for any array library with NumPy-like operations.

- `meshgrid_table` is the MAE / diffusers way: a meshgrid of coordinates, each axis's 1-D
  sin/cos of every cell's coordinate (`prod(grid) x d` transcendentals), one concatenate.
- `broadcast_table` computes each axis's own table once (only h + w (+ t) rows of sin/cos) and
  writes it into strided views of the output, broadcast over the other axes: each element
  is written once and no transcendental is repeated (libraries with in-place slice assignment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.core.kinds.grid import GridSpec
from ._axes import frequencies, functions, positions, segments


@dataclass(frozen=True)
class GridOps:
    """One array library's operations, in its compute dtype."""

    asarray: Callable[[Any], Any]               # float64 NumPy -> the library's array (compute dtype)
    meshgrid: Callable[[list], list]             # "ij" meshgrid of 1-D arrays
    outer: Callable[[Any, Any], Any]             # any shape (flattened) x [h] -> [n, h]
    concat: Callable[[list], Any]                # along the last axis
    cat_rows: Callable[[list], Any]              # along the first axis
    interleave: Callable[[Any, Any], Any]        # [n, h], [n, h] -> [n, 2h]: a0 b0 a1 b1 ...
    zeros: Callable[[int, int], Any]             # [rows, d] zeros in the output dtype
    empty: Callable[[int, int], Any]             # [rows, d] uninitialised, in the output dtype
    cast: Callable[[Any], Any]                   # compute dtype -> output dtype
    sin: Callable[[Any], Any]
    cos: Callable[[Any], Any]


@dataclass(frozen=True)
class Axes:
    """Each axis's positions and frequencies in the library's compute dtype (setup)."""

    positions: list
    frequencies: list


def prepare(spec: GridSpec, ops: GridOps) -> Axes:
    return Axes([ops.asarray(p) for p in positions(spec)], [ops.asarray(f) for f in frequencies(spec)])


def _pair(spec: GridSpec, ops: GridOps, theta: Any) -> tuple[Any, Any]:
    first, second = functions(spec)
    return getattr(ops, first)(theta), getattr(ops, second)(theta)


def meshgrid_table(spec: GridSpec, ops: GridOps, axes: Axes) -> Any:
    """MAE's get_2d_sincos_pos_embed in any library: meshgrid, 1-D embeddings, concatenate."""
    mesh = ops.meshgrid(axes.positions)
    pairs = {}
    for axis in range(spec.ndim):
        theta = ops.outer(mesh[axis], axes.frequencies[axis])
        pairs[axis] = _pair(spec, ops, theta)
    order = spec.axis_order
    if spec.layout == "function_major":
        parts = [pairs[a][0] for a in order] + [pairs[a][1] for a in order]
    elif spec.layout == "concat":
        parts = [part for a in order for part in pairs[a]]
    else:
        parts = [ops.interleave(*pairs[a]) for a in order]
    table = ops.cast(ops.concat(parts))
    return ops.cat_rows([ops.zeros(spec.extra, spec.d_model), table]) if spec.extra else table


def axis_table(spec: GridSpec, ops: GridOps, axes: Axes, axis: int) -> Any:
    """[n, width] of one axis: pairs side by side (interleaved) or first block | second block."""
    theta = ops.outer(axes.positions[axis], axes.frequencies[axis])
    first, second = _pair(spec, ops, theta)
    both = ops.interleave(first, second) if spec.layout == "interleaved" else ops.concat([first, second])
    return ops.cast(both)


def broadcast_table(spec: GridSpec, ops: GridOps, axes: Axes) -> Any:
    """Each axis's table computed once, broadcast-written into the output's strided views."""
    out = ops.empty(spec.rows, spec.d_model)
    out[: spec.extra] = 0
    cells = out[spec.extra:].reshape(*spec.grid, spec.d_model)
    tables = [axis_table(spec, ops, axes, axis) for axis in range(spec.ndim)]
    for seg in segments(spec):
        shape = [1] * spec.ndim + [seg.length]
        shape[seg.axis] = spec.grid[seg.axis]
        block = tables[seg.axis][:, seg.local: seg.local + seg.length]
        cells[..., seg.out: seg.out + seg.length] = block.reshape(shape)
    return out
