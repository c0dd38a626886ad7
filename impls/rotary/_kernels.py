"""Numba kernels of the rotary cache, and what the apply kernels share (registers nothing).

Why they are shaped this way: every (position, frequency) gets its cos and sin by float64
angle addition from the small tables of _tables.py (`angle_row`, rounded once), and a cache
row writes both copies of each frequency from them in the same pass. Blocks of BLOCK positions
go to threads in contiguous runs (`chunks`: one fork/join a call, scratch allocated once a
thread). Below SERIAL_BELOW elements a kernel runs on one thread: waking the others costs more
than the work (and far more when another process holds a core). One thread of the parallel
build, not a serial build: the serial build of the same code was 2x slower here. The apply
kernels (_apply_kernels.py) stream q and k through the same per-block cos/sin.

Every dtype runs the same kernels: a `Codec` (impls/_numba_half.py) stores each value and loads
each input, the identity for float32 and float64; float16 and bfloat16 arrays are their uint16
bits, computed in float32 (scratch and tables) and rounded once on the store. A float32 or
half-precision cache row is written by explicit vector IR (_vector_rows.py): as Numba loops, the
runtime alias checks and loop scaffolding of each 256-byte row cost more than its arithmetic and
stores. A cache larger than the last-level cache is computed a few rows at a time into a
per-thread scratch in L1 and copied out by streaming stores (no read of each output line first).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from .._numba_cache import njit as cached_njit

FASTMATH = {"contract"}   # fuse a*b + c into an FMA; no reassociation, no unsafe math
#: Positions per block: apply's per-thread cos/sin tables (256 x n_freq each, 128 KiB in float32
#: at rot 128) stay in L2, and a heads-first block of a head is a run of 256 contiguous rows
#: (64-128 KiB) for the prefetchers: 0-16% faster than 64-position blocks (16-32 KiB runs) in
#: alternating runs here (docs/fast.md).
BLOCK = 256
#: Elements written by one call below which a kernel runs on one thread (no fork/join).
SERIAL_BELOW = 1 << 16


@functools.cache
def common() -> SimpleNamespace:
    """What the cache and apply kernels share: `angle_row` and `chunks` (numba is imported only here)."""
    import numba

    njit = cached_njit(fastmath=FASTMATH)

    @njit(inline="always")
    def angle_row(index, i, tables, c, s):
        """c, s = cos/sin of position offset + index[i], every frequency, rounded once from
        float64; tables = (step, coarse cos, coarse sin, fine cos, fine sin). Inlined: a call
        per row cost more than the row at small n_freq."""
        step, cc, sc, cf, sf = tables
        q = index[i] // step
        a, b, x, y = cc[q], sc[q], cf[index[i] - q * step], sf[index[i] - q * step]
        for f in range(c.size):
            c[f] = a[f] * x[f] - b[f] * y[f]
        for f in range(c.size):
            s[f] = b[f] * x[f] + a[f] * y[f]

    @njit
    def chunks(units, threads):
        """(chunks, units per chunk, units): one chunk per thread, so scratch is allocated once
        each. `threads` comes from the caller (`run`): numba.get_num_threads() inside a kernel
        is a dynamic global, which keeps it out of Numba's on-disk cache."""
        threads = max(1, min(threads, units))
        return threads, (units + threads - 1) // threads, units

    return SimpleNamespace(angle_row=angle_row, chunks=chunks)


@functools.cache
def kernels(dtype: str = "float32") -> SimpleNamespace:
    """The cache kernel, compiled once per process and dtype: float32 and the half dtypes write
    rows as vector IR (_vector_rows.py), float64 by Numba loops; each with its store inlined."""
    import numba
    import numpy as np

    from .._numba_half import HALF_DTYPES, codecs
    from ..grid._copy import copy
    from ..table._tile import fence
    from ._vector_rows import cache_rows_at

    store = codecs()[dtype].store
    vector = dtype in HALF_DTYPES or dtype == "float32"   # rows as _vector_rows.py's IR loops
    half_row, pairs_row, half_two, pairs_two = ((cache_rows_at(dtype, layout, rows) for rows in (1, 2)
                                                 for layout in (False, True)) if vector else (None,) * 4)
    nt_copy, sfence = copy(), fence()
    shared = common()
    angle_row, chunks = shared.angle_row, shared.chunks
    njit = cached_njit(fastmath=FASTMATH)

    @njit
    def native_rows(out_c, out_s, index, p0, p1, tables, c, s, interleaved):
        """Rows p0:p1 of the cos/sin cache `[length, rot]`. "half": each row's n_freq distinct
        cos, then sin, computed straight into the first copy and rounded once as stored (one
        store stream a loop: few enough runtime alias checks for LLVM to vectorise; a loop
        storing all four copies was no faster, and up to 1.6x slower), then copied to the second
        (a copy of the stored bits: no second rounding). "interleaved": a scratch row c, s,
        then each frequency stored twice."""
        n = c.size
        if interleaved:
            for i in range(p0, p1):
                angle_row(index, i, tables, c, s)
                for f in range(n):
                    out_c[i, 2 * f] = store(c[f])
                    out_c[i, 2 * f + 1] = store(c[f])
                    out_s[i, 2 * f] = store(s[f])
                    out_s[i, 2 * f + 1] = store(s[f])
        else:
            step, cc, sc, cf, sf = tables
            for i in range(p0, p1):
                q = index[i] // step
                a, b, x, y = cc[q], sc[q], cf[index[i] - q * step], sf[index[i] - q * step]
                for f in range(n):
                    out_c[i, f] = store(a[f] * x[f] - b[f] * y[f])
                for f in range(n):
                    out_s[i, f] = store(b[f] * x[f] + a[f] * y[f])
                for f in range(n):
                    out_c[i, n + f] = out_c[i, f]
                for f in range(n):
                    out_s[i, n + f] = out_s[i, f]

    @njit(inline="always")
    def half_tail(oc, os, a, b, x, y, done, n, interleaved):
        """The n_freq % 8 frequencies a vector row leaves (none at rot 128), one by one."""
        for f in range(done, n):
            cv, sv = store(a[f] * x[f] - b[f] * y[f]), store(b[f] * x[f] + a[f] * y[f])
            first, second = (2 * f, 2 * f + 1) if interleaved else (f, n + f)
            oc[first], oc[second], os[first], os[second] = cv, cv, sv, sv

    @njit(inline="always")
    def vector_rows(out_c, out_s, index, p0, p1, tables, interleaved, bc, bs):
        """Rows p0:p1 of a float32 or half-precision cache, in one vector loop per row
        (_vector_rows.py: 16 lanes of cos and sin, rounded once, all four copies stored, no
        alias checks), two rows at once where consecutive positions share a coarse row (its
        a, b loaded once for both), then the n_freq % 8 frequencies left, if any, one by one.
        With a scratch (bc, bs: `stream` rows, else empty) rows go there, and each time it is
        full (and at p1) it is copied out by streaming stores (impls/grid/_copy.py)."""
        step, cc, sc, cf, sf = tables
        n, shift, stream, width = cc.shape[1], 0, bc.shape[0], out_c.shape[1]
        while (1 << shift) < step:
            shift += 1
        into_c, into_s = (bc, bs) if stream else (out_c, out_s)
        base, room = (p0, stream) if stream else (0, p1)   # row i goes to into_c[i - base]
        i = p0
        while i < p1:   # a shift for a power-of-two step: a division per row cost 10%
            if i - base == room:
                nt_copy(out_c, base * width, bc, 0, stream * width, True)
                nt_copy(out_s, base * width, bs, 0, stream * width, True)
                base = i
            q = index[i] >> shift if (1 << shift) == step else index[i] // step
            r, j = index[i] - q * step, i - base
            if i + 1 < p1 and j + 1 < room and r + 1 < step and index[i + 1] == index[i] + 1:
                if interleaved:
                    done = pairs_two(into_c, into_s, j, cc, sc, q, cf, sf, r)
                else:
                    done = half_two(into_c, into_s, j, cc, sc, q, cf, sf, r)
                if done < n:
                    for k in range(2):
                        half_tail(into_c[j + k], into_s[j + k], cc[q], sc[q], cf[r + k], sf[r + k], done, n,
                                  interleaved)
                i += 2
            else:
                if interleaved:
                    done = pairs_row(into_c, into_s, j, cc, sc, q, cf, sf, r)
                else:
                    done = half_row(into_c, into_s, j, cc, sc, q, cf, sf, r)
                if done < n:
                    half_tail(into_c[j], into_s[j], cc[q], sc[q], cf[r], sf[r], done, n, interleaved)
                i += 1
        if stream:
            nt_copy(out_c, base * width, bc, 0, (p1 - base) * width, True)
            nt_copy(out_s, base * width, bs, 0, (p1 - base) * width, True)

    def cache(out_c, out_s, index, tables, interleaved, work, stream, threads):
        """Row p of the cos/sin cache is position offset + index[p]; `work`: an empty array of
        the dtype the cos/sin are computed in; `stream`: 0, or rows a thread writes into its
        L1 scratch before copying them out by streaming stores (float32 and half dtypes: see
        numba.py's `streamed_rows`); `threads`: numba's thread count (`run`)."""
        nblocks = (index.size + BLOCK - 1) // BLOCK
        nchunks, per, nblocks = chunks(nblocks, threads)
        width = out_c.shape[1]
        for t in numba.prange(nchunks):
            c, s = np.empty(tables[1].shape[1], work.dtype), np.empty(tables[1].shape[1], work.dtype)
            bc, bs = np.empty((stream, width), out_c.dtype), np.empty((stream, width), out_s.dtype)
            for blk in range(t * per, min(nblocks, (t + 1) * per)):
                p0, p1 = blk * BLOCK, min(index.size, (blk + 1) * BLOCK)
                if vector:
                    vector_rows(out_c, out_s, index, p0, p1, tables, interleaved, bc, bs)
                else:
                    native_rows(out_c, out_s, index, p0, p1, tables, c, s, interleaved)
            if stream:   # this thread's streaming stores, ordered before the join
                sfence()

    return SimpleNamespace(cache=njit(parallel=True)(cache))

def run(kernel, elements: int, *args) -> None:
    """kernel(*args, threads) on every thread numba has, or on one for fewer than SERIAL_BELOW
    elements (the kernel is told the count: asking numba inside it would keep it out of the
    on-disk cache)."""
    import numba

    threads = numba.get_num_threads()
    if elements >= SERIAL_BELOW:
        kernel(*args, threads)
        return
    numba.set_num_threads(1)
    try:
        kernel(*args, 1)
    finally:
        numba.set_num_threads(threads)
