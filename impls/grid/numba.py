"""Numba grid: each axis's table rows, then every row written once, in one parallel region.

Why it is fast: a grid of h x w cells needs only (h + w) x d/2 sin/cos pairs, not h x w x d/2.
Each thread takes a contiguous run of (t, y) units, computes the per-axis table rows that run
touches (all of the last axis, its own range of the others) into its own scratch, straight
into the output dtype (a few hundred KiB that stay in L2), then copies each axis's block of
every row into place (impls/grid/_copy.py: streaming stores for grids of 16 MiB and more, else
memcpy), fencing its streaming stores once at its end: no transcendental and no division in
the row pass, every output element stored once. So the call is a fill's worth of stores plus
the small tables, and one fork/join, as the fill: with the tables in a parallel region of
their own (and the `extra` rows in a third) a thread descheduled at any of three joins
stalled the call, and under load the two-thread grid took 3x the fill (docs/fast.md).

The tables: by angle addition from setup tables of every FINE-th point's sin/cos and of the
first FINE steps' (`axis_tables`: n / FINE + FINE rows an axis, libm on float64 angles), two
multiplies and two multiply-adds a pair, where a float32 sincos per pair had taken 240 us of
CPU a call (bfloat16 16384 x 768, one thread: 15% of the grid; at two threads each thread
still computes all of the last axis). float32 output: float64 tables and arithmetic, rounded
once; float16 and bfloat16: float32 tables and arithmetic, rounded once as uint16 bits
(impls/_numba_half.py); float64 output calls libm on the float64 angle. Outputs start on a
32-byte boundary and fresh ones are faulted in by the threads that write them
(impls/table/numba_fast.outputs); `-recycled` writes into the memory of a grid the caller let go.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from harness import GridSupports, register
from harness.core.kinds.grid import GridSpec

from .._numba_half import Storage, codecs
from ._axes import frequencies, positions, segments
from ..table._tile import fence
from ..table.numba_fast import outputs
from ._copy import copy
from .._numba_cache import njit as cached_njit

#: The row pass decomposes a row into (t, y, x): grids are padded to three axes.
AXES = 3
#: Grids of at least this many bytes are written by streaming stores (impls/grid/_copy.py): at
#: 16384 x 768 float16 (24 MiB, below the 32 MiB L3) streamed took 1.5-1.6 ms against 2.5 cached
#: and 1.1-1.2 for bench's streaming fill (one thread, CPU time; docs/fast.md).
STREAM_BYTES = 16 << 20
#: Runs of the row pass per thread: one, so each thread computes the axis-table rows its run
#: needs once (tests raise it to cut runs across the leading axes' boundaries).
RUNS_PER_THREAD = 1
#: Fine rows of the angle-addition tables: axis row i is coarse row i // FINE turned by fine row
#: i % FINE (`axis_tables`), so the setup holds n / FINE + FINE rows of an n-point axis.
FINE = 16


@functools.cache
def _jit(dtype: str) -> SimpleNamespace:
    """Compile the kernel once per process and output dtype's codec (numba imported here)."""
    import numba

    store, move, sfence = codecs()[dtype].store, copy(), fence()
    exact = dtype == "float64"

    @cached_njit(inline="always", fastmath={"contract"})
    def pair(p, freq, coarse, fine, k):
        """sin, cos of p * freq[k]: by angle addition from a coarse row and a fine row of the
        setup's tables (`axis_tables`: [sin, cos] x frequency), libm on the float64 angle for
        float64 output."""
        if exact:
            return np.sin(p * freq[k]), np.cos(p * freq[k])
        return (coarse[0, k] * fine[1, k] + coarse[1, k] * fine[0, k],
                coarse[1, k] * fine[1, k] - coarse[0, k] * fine[0, k])

    @cached_njit(inline="always", fastmath={"contract"})
    def axis_row(row, p, freq, coarse, fine, h, interleaved, cos_first):
        """row[:2h] = the axis's h sin/cos pairs of point p, in the dtype: side by side
        (interleaved) or as two blocks. Each layout its own loop on the whole row, so that each
        vectorises: the row as two strided views ('A' layout) had kept the loop scalar."""
        if interleaved:
            for k in range(h):
                s, c = pair(p, freq, coarse, fine, k)
                row[2 * k], row[2 * k + 1] = (store(c), store(s)) if cos_first else (store(s), store(c))
        else:
            at_s, at_c = (h, 0) if cos_first else (0, h)
            for k in range(h):
                s, c = pair(p, freq, coarse, fine, k)
                row[at_s + k] = store(s)
                row[at_c + k] = store(c)

    @cached_njit(inline="always")
    def span(u0, u1, n1):
        """The index range [lo, hi] of the two leading axes that units u0 .. u1 - 1 touch."""
        t0, t1 = u0 // n1, (u1 - 1) // n1
        y0, y1 = (u0 % n1, (u1 - 1) % n1) if t0 == t1 else (0, n1 - 1)
        return t0, t1, y0, y1

    @cached_njit(parallel=True, fastmath={"contract"})
    def fill(out, scratch, pos, freq, sizes, halves, segs, interleaved, cos_first, extra, steps, runs, stream):
        """out[extra + r] = the blocks of r's point, from the axis tables each run computes into
        its own scratch[run] (only the rows its units touch) from the angle-addition tables
        `steps` (`axis_tables`); one parallel region per call."""
        width, units = out.shape[1], sizes[0] * sizes[1]
        coarse, fine = steps
        for run in numba.prange(runs):
            if run == 0:
                for r in range(extra):
                    out[r, :] = 0
            u0, u1 = run * units // runs, (run + 1) * units // runs
            tables = scratch[run]
            if u0 < u1:
                t0, t1, y0, y1 = span(u0, u1, sizes[1])
                for a in range(AXES):
                    lo = t0 if a == 0 else y0 if a == 1 else 0
                    hi = t1 if a == 0 else y1 if a == 1 else sizes[2] - 1
                    h = halves[a]
                    for i in range(lo, hi + 1):
                        axis_row(tables[a, i], pos[a, i], freq[a], coarse[a, i // FINE], fine[a, i % FINE], h,
                                 interleaved, cos_first)
            # a unit is one (t, y): its sizes[2] rows, contiguous, x by x, each block one copy (no
            # division per row); the run fences its streaming stores once at its end
            for unit in range(u0, u1):
                first, t, y = extra + unit * sizes[2], unit // sizes[1], unit % sizes[1]
                for x in range(sizes[2]):
                    for s in range(segs.shape[0]):
                        a, start, local, length = segs[s, 0], segs[s, 1], segs[s, 2], segs[s, 3]
                        i = t if a == 0 else y if a == 1 else x
                        move(out, (first + x) * width + start, tables,
                             (a * tables.shape[1] + i) * tables.shape[2] + local, length, stream)
            if stream:
                sfence()

    return SimpleNamespace(fill=fill)


def axis_tables(pos: np.ndarray, freq: np.ndarray, sizes: np.ndarray, halves: np.ndarray,
                work: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(coarse, fine), each `[AXES, rows, 2 (sin, cos), max half]` in `work`:
    sin/cos of the angle of every FINE-th point of each axis and of the first FINE steps of it,
    from the float64 angle by libm (setup, untimed). A call then gets axis row i, frequency k, by
    angle addition, sin(A + B) = sin A cos B + cos A sin B, cos(A + B) = cos A cos B - sin A sin B,
    with A = pos[q FINE] freq[k], B = (i - q FINE) step freq[k]: two multiplies and two
    multiply-adds a pair in place of a float32 sincos (docs/fast.md). Float64 for float32 output (one rounding of the float64
    sum), float32 for the half dtypes (computed in float32, rounded once)."""
    rows, h = int(sizes.max()), max(1, int(halves.max()))
    coarse = np.zeros((AXES, -(-rows // FINE), 2, h))
    fine = np.zeros((AXES, FINE, 2, h))
    for a in range(AXES):
        n, k = int(sizes[a]), int(halves[a])
        if not k:
            continue
        p, f = pos[a, :n], freq[a, :k]
        step = (p[-1] - p[0]) / (n - 1) if n > 1 else 0.0
        starts, offsets = np.multiply.outer(p[::FINE], f), np.multiply.outer(np.arange(FINE) * step, f)
        coarse[a, :starts.shape[0], 0, :k], coarse[a, :starts.shape[0], 1, :k] = np.sin(starts), np.cos(starts)
        fine[a, :, 0, :k], fine[a, :, 1, :k] = np.sin(offsets), np.cos(offsets)
    return coarse.astype(work), fine.astype(work)


def _arguments(spec: GridSpec) -> tuple:
    """The kernel's inputs, padded to three axes (leading axes of size 1), with the angle-addition
    tables in the dtype the kernel computes in (`axis_tables`)."""
    pad = AXES - spec.ndim
    sizes = np.array((1,) * pad + spec.grid, dtype=np.int64)
    halves = np.array((0,) * pad + tuple(w // 2 for w in spec.widths), dtype=np.int64)
    pos = np.zeros((AXES, int(sizes.max())))
    freq = np.zeros((AXES, max(1, int(halves.max()))))
    for axis, (p, f) in enumerate(zip(positions(spec), frequencies(spec))):
        pos[pad + axis, : p.size] = p
        freq[pad + axis, : f.size] = f
    segs = np.array([(pad + s.axis, s.out, s.local, s.length) for s in segments(spec)], dtype=np.int64)
    work = np.float32 if spec.dtype in ("float16", "bfloat16") else np.float64
    return (pos, freq, sizes, halves, segs, spec.layout == "interleaved", spec.cos_first, spec.extra,
            axis_tables(pos, freq, sizes, halves, work))


def run_count(threads: int, spec: GridSpec) -> int:
    """How many contiguous runs of (t, y) units the row pass is cut into: one per thread."""
    units = spec.rows - spec.extra
    return max(1, min(threads * RUNS_PER_THREAD, units // spec.grid[-1]))


def _build(spec: GridSpec, recycle: bool):
    kernel = _jit(spec.dtype).fill
    arguments = _arguments(spec)
    storage = Storage(spec.dtype)
    dtype, result = storage.kernel, storage.result()
    sizes, halves = arguments[2], arguments[3]
    table_shape = (AXES, int(sizes.max()), 2 * max(1, int(halves.max())))
    warm = GridSpec((1, 1), 4, dtype=spec.dtype)   # compiles for this dtype, untimed
    kernel(np.empty((1, 4), dtype), np.empty((1, AXES, 1, 2), dtype), *_arguments(warm), 1, True)
    shape = (spec.rows, spec.d_model)
    import numba

    empty = outputs(shape, dtype, recycle)   # 32-byte aligned, as streaming stores need

    def table():
        out, count = empty(), run_count(numba.get_num_threads(), spec)
        kernel(out, np.empty((count, *table_shape), dtype), *arguments, count, out.nbytes >= STREAM_BYTES)
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
