"""Numba: the angle-addition kernel, parallel over row blocks, writing the output once.

Why it is fast: per element it does two multiply-adds from tables that stay in
L1/L2 (a block-start row P, Q of width d and a [block, d] table X, Y) and one
store into the preallocated output; no transcendental, no temporary, no copy.
A table's rows are written by an explicit-vector loop (impls/table/_tile.py) into output
memory aligned to 32 bytes, by streaming stores when the table is at least the last-level
cache's size (no read for ownership), each thread fencing them once at its end. Where every
sine column has its cosine (`by_pairs`), rows and a forward's PE rows go by frequency pairs
(impls/table/_pair_tile.py: half the loads, the same bits); else by columns, a bfloat16
table's in the tile's paired order (`_sweeper(paired=True)`).
Threads take contiguous runs of blocks, and each faults in the fresh pages it writes
(`outputs`).
A block's start row (P, Q) is one angle-addition step, by float64 tables computed directly
in setup, from an anchor start computed directly (libm) every ANCHOR blocks: no recurrence
drifts, at any length, and float64 output pays d sin/cos per ANCHOR_EXACT blocks instead of
per block (that had been most of its time: 3.5-4.4x
the fill, now 2.5-3.2x, one thread, docs/fast.md). Within a block X, Y come from float64
rotations (float32) or directly (float64). `numba-angleadd-recycled` runs
the same kernel into the memory of a table the caller has let go
(harness.util.recycle), so a rebuilt table costs no page faults: ~1.4x a bare fill
of reused memory, where the fresh designs sit near a fresh allocate-and-fill
that is itself 2-4x that fill (docs/fast.md).

Where the error comes from: `numba-angleadd` rounds P, Q, X, Y to the output
dtype and multiply-adds there (max ~1.4e-7 in float32 at any position);
`numba-angleadd-f64` keeps them in float64 and rounds once (0.5 ulp, ~3e-8).
For float64 output X, Y are direct and P, Q one step from a direct anchor: a few float64
ulps, within the exact bound. float16 and bfloat16 tables
and forwards are the float32 arithmetic rounded once into uint16 bits (impls/_numba_half.py):
half an ulp of the half dtype plus float32's ~1e-7.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from harness import Spec, register
from harness.util.memory import aligned, aligned_owner
from harness.util.recycle import RecycledBuffers

from .._numba_half import DTYPES, HALF_DTYPES, Storage, codecs
from ._assemble import EVERY_CONVENTION as CONVENTIONS
from ._angle_addition import column_steps
from ._add_row import add_row
from ._pair_tile import LANES, LAYOUTS, pair_tile
from ._tile import PAIRED, STREAM_ALIGN, WIDTH, fence, paired_order, tile
from .._numba_cache import njit as cached_njit

#: Rows per block: X, Y of 32 x 1024 float32 is 256 KiB, resident in L2 while a block is written.
BLOCK = 32
#: Blocks for float64 output, whose block starts cost one direct sin/cos per column each.
BLOCK_EXACT = 64
#: Blocks per directly computed start (one libm sin/cos per column): float32 tables step up to
#: 63 blocks from it (2016 rows), float64 up to 15 (960 rows: libm had been most of its time).
ANCHOR = 64
ANCHOR_EXACT = 16
FASTMATH = {"contract"}
#: Tables of at least this many bytes are written by streaming stores (impls/table/_tile.py):
#: this CPU's 32 MiB L3, which such a table cannot stay in anyway (the half dtypes' 32 MiB
#: tables went 4.0-4.3 -> 3.2-3.4 ms streamed, one thread); smaller ones stay cached for
#: whoever reads them next.
STREAM_BYTES = 32 << 20
#: A cache line: where the row tables X, Y start (`_line_aligned`).
LINE = 64
#: Every convention, in every dtype (half dtypes through the codecs).
EVERY_CONVENTION = replace(CONVENTIONS, dtypes=DTYPES)   # fuse a*b + c into an FMA; no reassociation, no unsafe math


@functools.cache
def _jit(dtype: str = "float32", paired: bool = False, pairs: tuple[str, bool] | None = None
         ) -> SimpleNamespace:
    """Compile the kernels once per process and codec (numba is imported only here): float32
    and float64 share one set, each half dtype has its own, its store and load inlined;
    `paired`: a bfloat16 table's rows by the paired store (columns in `paired_order`);
    `pairs` (layout, cos_first): a table's rows by frequency pairs (impls/table/_pair_tile.py),
    its per-column inputs then per frequency (w, and a = 1, b = 0: P, Q are sin and cos)."""
    import numba

    njit = cached_njit(fastmath=FASTMATH)
    codec = codecs()[dtype]
    store, load = codec.store, codec.load
    if pairs is not None:
        rows, pe_tile = pair_tile(dtype, *pairs), pair_tile("float32", *pairs)

        @njit
        def pe_row(pe, X, Y, j, Pt, Qt):
            """A forward's PE row j of the block into pe[0] (float32), by frequency pairs."""
            pe_tile(pe, 0, X, Y, j, 1, Pt, Qt, False)
    else:
        rows = tile(PAIRED if paired else dtype if dtype in HALF_DTYPES else "native")   # its vector store

        @njit
        def pe_row(pe, X, Y, j, Pt, Qt):
            """A forward's PE row j of the block into pe[0], column by column."""
            for c in range(pe.shape[1]):
                pe[0, c] = Pt[c] * X[j, c] + Qt[c] * Y[j, c]
    add = add_row(dtype if dtype in HALF_DTYPES else "native")   # a forward's row, likewise
    sfence = fence()

    @njit
    def start(P, Q, w, a, b, position):
        """(g, g') of every column at `position`, directly in float64."""
        for c in range(w.size):
            theta = position * w[c]
            s, co = np.sin(theta), np.cos(theta)
            P[c] = a[c] * s + b[c] * co
            Q[c] = a[c] * co - b[c] * s

    @njit
    def rotate(P, Q, cos_step, sin_step):
        for c in range(P.size):
            p = P[c]
            P[c] = p * cos_step[c] + Q[c] * sin_step[c]
            Q[c] = Q[c] * cos_step[c] - p * sin_step[c]

    @njit
    def within_block(w, block, exact, anchor):
        """X = cos(j w), Y = sin(j w) for j < block (direct if `exact`, else by rotation), and
        the steps from an anchor to the m-th block after it, cos(m block w) and sin(m block w)
        for m < anchor, each computed directly."""
        X, Y = np.empty((block, w.size)), np.empty((block, w.size))
        X[0] = 1.0
        Y[0] = 0.0
        cw, sw = np.cos(w), np.sin(w)
        for j in range(1, block):
            if exact:
                X[j] = np.cos(j * w)
                Y[j] = np.sin(j * w)
            else:
                X[j] = X[j - 1]
                Y[j] = Y[j - 1]
                rotate(Y[j], X[j], cw, sw)   # (g, g') = (sin, cos)
        steps = np.arange(anchor).astype(np.float64) * block
        return X, Y, np.cos(np.outer(steps, w)), np.sin(np.outer(steps, w))

    @njit(parallel=True)
    def sweep(out, x, w, a, b, offset, X, Y, cos_steps, sin_steps, threads, stream):
        """out[n, p] = PE[p] (x is None) or x[n, p] + PE[p]; X, Y's dtype is the arithmetic's.

        A block's start row (P, Q) is one angle-addition step from the last anchor, a start
        computed directly every `anchor` blocks: never more than one step from libm, so no
        drift at any length, and float64 output pays d sin/cos per `anchor` blocks instead of
        per block. The element loops index 2-D arrays directly: a row-slicing helper called
        per row was ~8% slower at 8192 x 1024 (measured on recycled memory)."""
        batch, length, d = out.shape
        block, anchor = X.shape[0], cos_steps.shape[0]
        scalar = 0 if d >= WIDTH else d   # columns left to a scalar loop (the tile writes d >= WIDTH)
        nblocks = (length + block - 1) // block
        nchunks = max(1, min(threads, nblocks))
        per = (nblocks + nchunks - 1) // nchunks
        for t in numba.prange(nchunks):   # the only parallel region: one fork/join per call
            P, Q = np.empty(w.size), np.empty(w.size)   # per column, or per frequency (pairs)
            Pt, Qt = np.empty_like(X[0]), np.empty_like(X[0])
            pe_rows = np.empty((1, d), X.dtype)   # a forward's PE row (pe_row writes rows)
            pe = pe_rows[0]
            first = t * per
            table = out[0]
            for blk in range(first, min(nblocks, first + per)):
                m = (blk - first) % anchor
                if m == 0:
                    start(P, Q, w, a, b, float(offset + blk * block))
                for c in range(w.size):
                    Pt[c] = P[c] * cos_steps[m, c] + Q[c] * sin_steps[m, c]
                    Qt[c] = Q[c] * cos_steps[m, c] - P[c] * sin_steps[m, c]
                if x is None:
                    count = min(block, length - blk * block)
                    rows(table, blk * block, X, Y, 0, count, Pt, Qt, stream)
                    for j in range(count):
                        for c in range(scalar):
                            table[blk * block + j, c] = store(Pt[c] * X[j, c] + Qt[c] * Y[j, c])
                    continue
                for j in range(min(block, length - blk * block)):
                    p = blk * block + j
                    pe_row(pe_rows, X, Y, j, Pt, Qt)
                    for n in range(batch):
                        add(out, n, p, x, pe, stream)
                        for c in range(scalar):
                            out[n, p, c] = store(load(x[n, p, c]) + pe[c])
            if stream:   # this thread's streaming stores, ordered before the join
                sfence()

    return SimpleNamespace(within_block=within_block, sweep=sweep)


def _work(spec: Spec) -> np.dtype:
    """The arithmetic of the output dtype: itself, or float32 for a half dtype."""
    return np.dtype(np.float32 if spec.dtype in HALF_DTYPES else spec.dtype)


def by_pairs(spec: Spec, arithmetic: np.dtype) -> bool:
    """Whether a table is written by frequency pairs (impls/table/_pair_tile.py): float32
    arithmetic, every frequency a sine and a cosine column (d even), whole groups of LANES."""
    return (arithmetic == np.float32 and spec.layout in LAYOUTS and spec.d_model % 2 == 0
            and spec.n_freq == spec.d_model // 2 and spec.n_freq % LANES == 0)


def _sweeper(spec: Spec, arithmetic: np.dtype, paired: bool = False, pairs: bool = False):
    """Factory body shared by table and forward: compile for these types now, return run(out, x).
    `paired` (a bfloat16 table, d a multiple of WIDTH): every per-column input in `paired_order`,
    so that each block's rows, computed column by column, come out in the order the paired
    store takes (impls/table/_tile.py). `pairs` (`by_pairs`): a table's rows, or a forward's
    PE rows, by frequency pairs, the inputs per frequency."""
    import numba

    dtype = spec.dtype if spec.dtype in HALF_DTYPES else "float32"
    steps = column_steps(spec)
    if pairs:
        kernels = _jit(dtype, pairs=(spec.layout, spec.cos_first))
        w = steps.w
        a, b = np.ones_like(w), np.zeros_like(w)   # P, Q: each frequency's sin and cos
    else:
        kernels = _jit(dtype, paired)
        w, a, b = steps.column_w, steps.a, steps.b
    if paired and not pairs:
        order = paired_order(spec.d_model)
        w, a, b = w[order], a[order], b[order]
    exact = spec.dtype == "float64"
    block = min(BLOCK_EXACT if exact else BLOCK, spec.length)

    # the block and step tables depend on the Spec alone: built once, like w
    anchor = min(ANCHOR_EXACT if exact else ANCHOR, -(-spec.length // block))
    X, Y, cos_steps, sin_steps = kernels.within_block(w, block, exact, anchor)
    X, Y = _line_aligned(X.astype(arithmetic)), _line_aligned(Y.astype(arithmetic))

    # a half forward is not streamed: against cached stores it measured no faster (bfloat16 and
    # float16, 2 x 65536 x 256, per-thread CPU time beside torch's x + pe; docs/fast.md)
    x_streams = spec.dtype not in HALF_DTYPES

    def run(out, x=None):   # the thread count from here: inside, it keeps the kernel uncached
        stream = out.nbytes >= STREAM_BYTES and (x is None or x_streams)
        kernels.sweep(out, x, w, a, b, spec.offset, X, Y, cos_steps, sin_steps,
                      numba.get_num_threads(), stream)
        return out

    return run


def _line_aligned(table: np.ndarray) -> np.ndarray:
    """A copy of `table` starting on a cache line: NumPy starts a small array 16 or 48 bytes
    past one, and then every other 32-byte load of a row of X or Y spans two lines, which the
    load ports pay twice (the rows are 64-byte multiples for every d the tile takes whole)."""
    copy = aligned(aligned_owner(table.shape, table.dtype, LINE), table.shape, table.dtype, LINE)
    copy[...] = table
    return copy


def _warm(run, spec: Spec, x=None) -> None:
    """Call once on a 1-row slice so JIT compilation stays out of the timed call."""
    tiny = np.empty((1 if x is None else x.shape[0], 1, spec.d_model), Storage(spec.dtype).kernel)
    run(tiny, None if x is None else np.ascontiguousarray(x[:, :1]))


def outputs(shape: tuple[int, ...], dtype, recycle: bool) -> Callable[[], np.ndarray]:
    """Each call's output buffer: fresh, or recycled (harness.util.recycle), starting on a
    32-byte boundary so that the tile's streaming stores apply (`np.empty` starts 16 bytes
    off). A fresh output's pages are faulted in by the threads that write them: one thread
    faulting them all first (`harness.util.memory.first_touch`, as this did) zeroed every page
    of a table past the L3 before the kernel wrote it again, and took twice the CPU of a call
    (docs/fast.md, *First calls*)."""

    def owner() -> np.ndarray:
        return aligned_owner(shape, dtype, STREAM_ALIGN)

    def view(memory: np.ndarray) -> np.ndarray:
        return aligned(memory, shape, dtype, STREAM_ALIGN)

    if recycle:
        return RecycledBuffers(shape, dtype, allocate=owner, view=view).take
    return lambda: view(owner())


def _build_table(spec: Spec, arithmetic: np.dtype, recycle: bool = False):
    run = _sweeper(spec, arithmetic, paired=spec.dtype == "bfloat16" and spec.d_model % WIDTH == 0,
                   pairs=by_pairs(spec, arithmetic))
    _warm(run, spec)
    storage = Storage(spec.dtype)
    output, result = outputs((spec.length, spec.d_model), storage.kernel, recycle), storage.result()

    def table():
        out = output()
        run(out[None])
        return result(out)

    return table


@register(name="numba-angleadd", backend="numba", supports=EVERY_CONVENTION)
def build_numba_angleadd(spec: Spec):
    """Angle addition in the output dtype (float32 for half dtypes), parallel row blocks."""
    return _build_table(spec, _work(spec))


@register(name="numba-angleadd-f64", backend="numba", supports=EVERY_CONVENTION)
def build_numba_angleadd_f64(spec: Spec):
    """Angle addition in float64, rounded once: 0.5 ulp float32 tables at any position."""
    return _build_table(spec, np.dtype(np.float64))


@register(name="numba-angleadd-recycled", backend="numba", supports=EVERY_CONVENTION)
def build_numba_angleadd_recycled(spec: Spec):
    """numba-angleadd writing into the memory of a table the caller has let go (RecycledBuffers):
    no page faults when tables are rebuilt, at the price of keeping two tables allocated."""
    return _build_table(spec, _work(spec), recycle=True)


def _build_forward(spec: Spec, recycle: bool = False):
    run = _sweeper(spec, _work(spec), pairs=by_pairs(spec, _work(spec)))
    storage = Storage(spec.dtype)
    _warm(run, spec, np.zeros((1, 1, spec.d_model), storage.kernel))
    per_shape: dict[tuple[int, ...], Callable[[], np.ndarray]] = {}   # outputs per shape of x
    result = storage.result()

    def forward(x):
        x = storage.encode(x)   # the dtype's values as the kernel reads them (half: uint16 bits)
        output = per_shape.get(x.shape) or per_shape.setdefault(
            x.shape, outputs(x.shape, storage.kernel, recycle))
        return result(run(output(), x))

    return forward


@register(name="numba-fused-forward", backend="numba", workload="forward", supports=EVERY_CONVENTION)
def build_numba_fused_forward(spec: Spec):
    """x + PE with each PE row computed once per position and added to every batch row."""
    return _build_forward(spec)


@register(name="numba-fused-forward-recycled", backend="numba", workload="forward",
          supports=EVERY_CONVENTION)
def build_numba_fused_forward_recycled(spec: Spec):
    """numba-fused-forward writing into the memory of an output the caller has let go."""
    return _build_forward(spec, recycle=True)
