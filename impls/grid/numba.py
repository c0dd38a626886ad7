"""Numba grid: each axis's table once, then one parallel pass writing every row once.

Why it is fast: a grid of h x w cells needs only (h + w) x d/2 sin/cos pairs, not h x w x d/2.
The kernel computes those per-axis tables first (in float64, rounded once to the output dtype;
a few KiB that stay in L1/L2), then threads take rows and copy each axis's block of the row's
grid point into place: no transcendental in the row pass, every output element stored once.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from harness import register
from harness.core.kinds.grid import GridSpec
from ._axes import frequencies, positions, segments
from harness import GridSupports

#: The row pass decomposes a row into (t, y, x): grids are padded to three axes.
AXES = 3


@functools.cache
def _jit() -> SimpleNamespace:
    """Compile the kernel once per process (numba is imported only here)."""
    import numba

    @numba.njit(parallel=True, cache=False)
    def fill(out, tables, pos, freq, sizes, halves, segs, interleaved, cos_first, extra):
        """tables[a, i] = axis a's embedding of index i; out[extra + r] = the blocks of r's point."""
        total = sizes[0] + sizes[1] + sizes[2]
        for q in numba.prange(total):
            a, before = 0, 0
            while q - before >= sizes[a]:
                before += sizes[a]
                a += 1
            i = q - before
            h = halves[a]
            for k in range(h):
                theta = pos[a, i] * freq[a, k]
                s, c = np.sin(theta), np.cos(theta)
                f, g = (c, s) if cos_first else (s, c)
                if interleaved:
                    tables[a, i, 2 * k] = f
                    tables[a, i, 2 * k + 1] = g
                else:
                    tables[a, i, k] = f
                    tables[a, i, h + k] = g
        plane = sizes[1] * sizes[2]
        for r in numba.prange(out.shape[0]):
            if r < extra:
                out[r, :] = 0
                continue
            cell = r - extra
            point = (cell // plane, (cell // sizes[2]) % sizes[1], cell % sizes[2])
            for s in range(segs.shape[0]):
                a, start, local, length = segs[s, 0], segs[s, 1], segs[s, 2], segs[s, 3]
                i = point[0] if a == 0 else point[1] if a == 1 else point[2]
                for j in range(length):
                    out[r, start + j] = tables[a, i, local + j]

    return SimpleNamespace(fill=fill)


def _arguments(spec: GridSpec) -> tuple:
    """The kernel's inputs, padded to three axes (leading axes of size 1)."""
    pad = AXES - spec.ndim
    sizes = np.array((1,) * pad + spec.grid, dtype=np.int64)
    halves = np.array((0,) * pad + tuple(w // 2 for w in spec.widths), dtype=np.int64)
    pos = np.zeros((AXES, int(sizes.max())))
    freq = np.zeros((AXES, max(1, int(halves.max()))))
    for axis, (p, f) in enumerate(zip(positions(spec), frequencies(spec))):
        pos[pad + axis, : p.size] = p
        freq[pad + axis, : f.size] = f
    segs = np.array([(pad + s.axis, s.out, s.local, s.length) for s in segments(spec)], dtype=np.int64)
    return pos, freq, sizes, halves, segs, spec.layout == "interleaved", spec.cos_first, spec.extra


@register(name="grid-numba", backend="numba", workload="grid",
          supports=GridSupports(dtypes=("float32", "float64")))
def build_grid_numba(spec: GridSpec):
    """Per-axis sin/cos tables, then a parallel row pass copying each row's blocks once."""
    kernel = _jit().fill
    pos, freq, sizes, halves, segs, interleaved, cos_first, extra = _arguments(spec)
    dtype = np.dtype(spec.dtype)
    table_shape = (AXES, int(sizes.max()), 2 * max(1, int(halves.max())))
    warm = GridSpec((1, 1), 4, dtype=spec.dtype)   # compiles for this dtype, untimed
    kernel(np.empty((1, 4), dtype), np.empty((AXES, 1, 2), dtype), *_arguments(warm))

    def table():
        out = np.empty((spec.rows, spec.d_model), dtype)
        kernel(out, np.empty(table_shape, dtype), pos, freq, sizes, halves, segs, interleaved, cos_first,
               extra)
        return out

    return table
