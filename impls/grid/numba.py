"""Numba grid: each axis's table once, then one parallel pass writing every row once.

Why it is fast: a grid of h x w cells needs only (h + w) x d/2 sin/cos pairs, not h x w x d/2.
The kernel computes those per-axis tables first, straight into the output dtype (a few hundred
KiB that stay in L2), then threads take rows and copy each axis's block of the row's grid point
into place through row slices (unit-stride loops LLVM turns into vector copies; indexing
`out[r, start + j]` instead did not vectorise): no transcendental in the row pass, every output
element stored once. So the call is a fill's worth of stores plus the small tables.

The tables: below float64, a float64 angle reduced once for sin and cos and float32 polynomials
(impls/_numba_sincos.py: a few float32 ulps at any coordinate, vectorised, ~1 ns a pair),
rounded once to the dtype (float16 and bfloat16 as uint16 bits, impls/_numba_half.py); float64
output calls libm on the float64 angle. Fresh outputs are faulted in by one thread before the
parallel pass when several threads write it (`fresh_output`); `-recycled` writes into the
memory of a grid the caller let go.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from harness import GridSupports, register
from harness.core.kinds.grid import GridSpec
from harness.util.memory import fresh_output
from harness.util.recycle import RecycledBuffers

from .._numba_half import Storage, codecs
from .._numba_sincos import sincos
from ._axes import frequencies, positions, segments
from .._numba_cache import njit as cached_njit

#: The row pass decomposes a row into (t, y, x): grids are padded to three axes.
AXES = 3


@functools.cache
def _jit(dtype: str) -> SimpleNamespace:
    """Compile the kernel once per process and output dtype's codec (numba imported here)."""
    import numba

    sincos32, store = sincos(), codecs()[dtype].store
    exact = dtype == "float64"

    @cached_njit(inline="always", fastmath={"contract"})
    def axis_row(first, second, p, freq, h):
        """first[k], second[k] = sin, cos (or the pair) of p * freq[k], k < h, in the dtype."""
        for k in range(h):
            if exact:
                s, c = np.sin(p * freq[k]), np.cos(p * freq[k])
            else:
                s, c = sincos32(p * freq[k])
            first[k] = store(s)
            second[k] = store(c)

    @cached_njit(parallel=True, fastmath={"contract"})
    def fill(out, tables, pos, freq, sizes, halves, segs, interleaved, cos_first, extra):
        """tables[a, i] = axis a's embedding of index i; out[extra + r] = the blocks of r's point."""
        total = sizes[0] + sizes[1] + sizes[2]
        for q in numba.prange(total):
            a, before = 0, 0
            while q - before >= sizes[a]:
                before += sizes[a]
                a += 1
            i, h = q - before, halves[a]
            row = tables[a, i]
            if interleaved:
                evens, odds = row[0:2 * h:2], row[1:2 * h:2]
                sins, coss = (odds, evens) if cos_first else (evens, odds)
            else:
                sins, coss = (row[h:2 * h], row[:h]) if cos_first else (row[:h], row[h:2 * h])
            axis_row(sins, coss, pos[a, i], freq[a], h)
        plane = sizes[1] * sizes[2]
        for r in numba.prange(out.shape[0]):
            dst = out[r]
            if r < extra:
                dst[:] = 0
                continue
            cell = r - extra
            point = (cell // plane, (cell // sizes[2]) % sizes[1], cell % sizes[2])
            for s in range(segs.shape[0]):
                a, start, local, length = segs[s, 0], segs[s, 1], segs[s, 2], segs[s, 3]
                i = point[0] if a == 0 else point[1] if a == 1 else point[2]
                into, src = dst[start:start + length], tables[a, i, local:local + length]
                for j in range(length):
                    into[j] = src[j]

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


def _build(spec: GridSpec, recycle: bool):
    kernel = _jit(spec.dtype).fill
    arguments = _arguments(spec)
    storage = Storage(spec.dtype)
    dtype, result = storage.kernel, storage.result()
    sizes, halves = arguments[2], arguments[3]
    table_shape = (AXES, int(sizes.max()), 2 * max(1, int(halves.max())))
    warm = GridSpec((1, 1), 4, dtype=spec.dtype)   # compiles for this dtype, untimed
    kernel(np.empty((1, 4), dtype), np.empty((AXES, 1, 2), dtype), *_arguments(warm))
    shape = (spec.rows, spec.d_model)
    import numba

    fresh = lambda: fresh_output(shape, dtype, numba.get_num_threads())   # noqa: E731
    empty = RecycledBuffers(shape, dtype, allocate=fresh).take if recycle else fresh

    def table():
        out = empty()
        kernel(out, np.empty(table_shape, dtype), *arguments)
        return result(out)

    return table


@register(name="grid-numba", backend="numba", workload="grid", supports=GridSupports())
def build_grid_numba(spec: GridSpec):
    """Per-axis sin/cos tables, then a parallel row pass copying each row's blocks once."""
    return _build(spec, recycle=False)


@register(name="grid-numba-recycled", backend="numba", workload="grid", supports=GridSupports())
def build_grid_numba_recycled(spec: GridSpec):
    """grid-numba into the memory of a grid let go: no page faults, two grids kept."""
    return _build(spec, recycle=True)
