"""Pure Python grid: one math.sin / math.cos per element, for tiny grids only."""

from __future__ import annotations

import math

from harness import register
from harness.core.kinds.grid import GridSpec

from ._axes import frequencies, functions, positions, segments
from harness import GridSupports


def _column_sources(spec: GridSpec) -> list[tuple[int, str, int]]:
    """(axis, function name, frequency index) of every output column."""
    first, second = functions(spec)
    sources: list = [None] * spec.d_model
    for seg in segments(spec):
        half = spec.widths[seg.axis] // 2
        for j in range(seg.length):
            local = seg.local + j
            if spec.layout == "interleaved":
                source = (seg.axis, (first, second)[local % 2], local // 2)
            else:
                source = (seg.axis, (first, second)[local // half], local % half)
            sources[seg.out + j] = source
    return sources


@register(name="grid-python", backend="python", workload="grid",
          supports=GridSupports(dtypes=("float32", "float64"), max_elements=20_000))
def build_grid_python(spec: GridSpec):
    """Nested loops over rows and columns: the grid point of each row, then each column's angle."""
    import numpy as np

    sources = _column_sources(spec)
    coords = [p.tolist() for p in positions(spec)]
    freqs = [f.tolist() for f in frequencies(spec)]
    grid, extra, dtype = spec.grid, spec.extra, np.dtype(spec.dtype)

    def table():
        out = np.zeros((spec.rows, spec.d_model), dtype=dtype)
        for r in range(math.prod(grid)):
            point, rest = [], r
            for n in reversed(grid):
                point.append(rest % n)
                rest //= n
            point.reverse()
            for col, (axis, fn, k) in enumerate(sources):
                theta = coords[axis][point[axis]] * freqs[axis][k]
                out[extra + r, col] = math.sin(theta) if fn == "sin" else math.cos(theta)
        return out

    return table
