"""Numba kernels of rotary apply in every form it takes, by blocks of positions (registers nothing).

One pass reads q and k once and writes each output once. A unit of work is one block of BLOCK
positions of one row of position ids (`ids` is `[1, seq]` for ids shared by the batch, or
`[batch, seq]`): its cos/sin are formed once (`fill`: angle addition, or rows of a cache) into a
small per-thread table and every head of q and k at those positions streams through it, every
batch row too when the ids are shared. So GQA costs nothing (k's heads are whatever k has) and
each (position, frequency) is a transcendental-free multiply-add once per call. Units go to
threads in contiguous runs (`chunks`): one fork/join per call, scratch allocated once a thread.

Both layouts are walked in their own memory order, never converted: heads first (`[b, h, s,
d]`), a block of a head is BLOCK contiguous rows; sequence first (`[b, s, h, d]`), a position's
heads are contiguous rows sharing one cos/sin row. A row is rotated by two unit-stride loops
over the frequencies ("half": one loop per half, which vectorises; a loop writing both halves
did not) or one over pairs ("interleaved"); dims past rotary_dim are copied (partial rotary).
In place (`in_place`: oq is q), the "half" rotation keeps both halves of a frequency in registers, one
loop: the two-loop form would read a first half it had already overwritten.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from ._kernels import BLOCK, FASTMATH, common
from .._numba_cache import njit as cached_njit


@functools.cache
def apply_kernels(dtype: str = "float32") -> SimpleNamespace:
    """Compile once per process and codec (float32 and float64 share one set, as `kernels`)."""
    import numba
    import numpy as np

    from .._numba_half import HALF_DTYPES, codecs
    from ._vector_rows import LANES, rotation_row, rotation_rows

    codec = codecs()[dtype]
    store, load = codec.store, codec.load
    half = dtype in HALF_DTYPES
    half_rotation, pairs_rotation = ((rotation_row(dtype, False), rotation_row(dtype, True)) if half
                                     else (None, None))
    half_rows, pairs_rows = rotation_rows(dtype, False), rotation_rows(dtype, True)
    shared = common()
    angle_row, chunks = shared.angle_row, shared.chunks
    njit = cached_njit(fastmath=FASTMATH)

    @njit
    def angles(ids, p0, p1, tables, c, s):
        """Rows of c, s: cos/sin of positions offset + ids[p0:p1]."""
        for i in range(p0, p1):
            angle_row(ids, i, tables, c[i - p0], s[i - p0])

    @njit
    def gather(ids, p0, p1, tables, c, s):
        """Rows of c, s copied from a cache's distinct columns, tables = (cos, sin) `[rows, n]`."""
        cos, sin = tables
        for i in range(p0, p1):
            cr, sr, row = c[i - p0], s[i - p0], ids[i]
            for f in range(c.shape[1]):
                cr[f] = load(cos[row, f])
            for f in range(c.shape[1]):
                sr[f] = load(sin[row, f])

    @njit(inline="always")
    def rotate_row(x, cr, sr, n, interleaved):
        """One head's row rotated where it is (dims past 2 n untouched): both halves of a
        frequency loaded before either is stored, one loop that vectorises (a loop storing into
        another array than it loads from did not: too many runtime alias checks for LLVM)."""
        if interleaved:
            for f in range(n):
                x1, x2 = load(x[2 * f]), load(x[2 * f + 1])
                x[2 * f] = store(x1 * cr[f] - x2 * sr[f])
                x[2 * f + 1] = store(x2 * cr[f] + x1 * sr[f])
        else:
            x1, x2 = x[:n], x[n:2 * n]
            for f in range(n):
                a, b = load(x1[f]), load(x2[f])
                x1[f] = store(a * cr[f] - b * sr[f])
                x2[f] = store(b * cr[f] + a * sr[f])

    @njit(inline="always")
    def half_rotate_row(x, cr, sr, n, interleaved):
        """A half dtype's row: whole vectors by explicit IR (_vector_rows.rotation_row: no runtime
        alias checks, NaN found by one compare), the n % 8 frequencies left one by one."""
        done = pairs_rotation(x, cr, sr) if interleaved else half_rotation(x, cr, sr)
        for f in range(done, n):
            i, j = (2 * f, 2 * f + 1) if interleaved else (f, n + f)
            a, b = load(x[i]), load(x[j])
            x[i] = store(a * cr[f] - b * sr[f])
            x[j] = store(b * cr[f] + a * sr[f])

    rotate = half_rotate_row if half else rotate_row

    @njit
    def rotate_block(x, o, b, p0, p1, c, s, n, interleaved, in_place, seq_first):
        """Positions p0:p1 of batch row b, every head of x (q or k), rotated into o: copied
        there first (a flat copy per contiguous run: the whole block sequence first, a run per
        head heads first; the tail past rotary_dim comes with it), then rotated in place while
        it is in cache. Rows in memory order: position by position, its heads (sequence first),
        or head by head. No inlining into the sweep: each inlined copy cost seconds of compiling."""
        heads, d = (x.shape[2] if seq_first else x.shape[1]), x.shape[3]
        if not in_place:
            xf, of = x.reshape(-1), o.reshape(-1)
            runs, run = (1, (p1 - p0) * heads * d) if seq_first else (heads, (p1 - p0) * d)
            for r in range(runs):
                start = ((b * x.shape[1] + p0) * heads * d if seq_first
                         else ((b * heads + r) * x.shape[2] + p0) * d)
                xs, os = xf[start:start + run], of[start:start + run]
                for j in range(run):   # from 0: no negative-index fix-up in the loop
                    os[j] = xs[j]
        if n % LANES == 0:   # runs of rows by one vector call each (float64: False, the loop below)
            of, count = o.reshape(-1), p1 - p0
            done = True
            if seq_first:    # a position's heads share its cos/sin row
                for u in range(count):
                    start = ((b * o.shape[1] + p0 + u) * heads) * d
                    done = (pairs_rows(of, start, d, heads, c, s, u, 0) if interleaved
                            else half_rows(of, start, d, heads, c, s, u, 0))
            else:            # a head's block: rows p0:p1, one cos/sin row each
                for h in range(heads):
                    start = ((b * heads + h) * o.shape[2] + p0) * d
                    done = (pairs_rows(of, start, d, count, c, s, 0, 1) if interleaved
                            else half_rows(of, start, d, count, c, s, 0, 1))
            if done:
                return
        outer, inner = (p1 - p0, heads) if seq_first else (heads, p1 - p0)
        for u in range(outer):
            for v in range(inner):
                i, h = (p0 + u, v) if seq_first else (p0 + v, u)
                rotate(o[b, i, h] if seq_first else o[b, h, i], c[i - p0], s[i - p0], n, interleaved)

    def sweep_with(fill):
        """The sweep with `fill` (angles or gather) captured, not passed: a kernel passed as an
        argument has a type that differs in every process, which keeps Numba's cache from ever
        hitting (impls/_numba_cache.py)."""
        def sweep(q, k, oq, ok, ids, tables, n, interleaved, seq_first, in_place, work, threads):
            """q, k rotated into oq, ok (in place: oq is q, ok is k); position ids
            `[1 or batch, seq]`; `work`: an empty array of the dtype the cos/sin are computed
            in; `threads`: numba's thread count (harness.impls.rotary._kernels.run)."""
            batch, seq, shared = q.shape[0], ids.shape[1], ids.shape[0] == 1
            per_row = (seq + BLOCK - 1) // BLOCK
            nchunks, per, units = chunks(ids.shape[0] * per_row, threads)
            for t in numba.prange(nchunks):
                c, s = np.empty((BLOCK, n), work.dtype), np.empty((BLOCK, n), work.dtype)
                for unit in range(t * per, min(units, (t + 1) * per)):
                    row, blk = unit // per_row, unit % per_row
                    p0, p1 = blk * BLOCK, min(seq, (blk + 1) * BLOCK)
                    fill(ids[row], p0, p1, tables, c, s)
                    for b in range(0 if shared else row, batch if shared else row + 1):
                        rotate_block(q, oq, b, p0, p1, c, s, n, interleaved, in_place, seq_first)
                        rotate_block(k, ok, b, p0, p1, c, s, n, interleaved, in_place, seq_first)

        return njit(parallel=True)(sweep)

    return SimpleNamespace(angles=angles, gather=gather,
                           sweeps={angles: sweep_with(angles), gather: sweep_with(gather)})
