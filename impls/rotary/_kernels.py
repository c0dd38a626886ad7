"""Numba kernels of the rotary cache and apply, by blocks of positions (registers nothing).

Why they are shaped this way: a block of BLOCK positions gets its cos/sin once, into a small
per-thread table in the output's dtype (float64 angle addition from _rotary_tables.py, rounded
once), and then every batch and head row of q and k streams through it: each (b, h) slice of a
block is one contiguous run of memory, and the rotation's inner loops are unit-stride loops over
the frequencies in the data's own dtype, which LLVM vectorises (float64 cos/sin in the hot loop
halved the vector width; one loop writing both halves of a "half" row did not vectorise at all).
Below SERIAL_BELOW elements a kernel runs on one thread: waking the others costs more than the
work (and far more when another process holds a core). One thread of the parallel build, not a
serial build: the serial build of the same code was 2x slower here.

Every dtype runs the same kernels: a `Codec` (impls/_numba_half.py) stores each value and loads
each input, the identity for float32 and float64; float16 and bfloat16 arrays are their uint16
bits, computed in float32 (scratch and tables) and rounded once on the store.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

FASTMATH = {"contract"}   # fuse a*b + c into an FMA; no reassociation, no unsafe math
#: Positions per block: a 64 x 64 float32 cos/sin table is 32 KiB, in L1/L2 while it is used.
BLOCK = 64
#: Elements written by one call below which a kernel runs on one thread (no fork/join).
SERIAL_BELOW = 1 << 16


@functools.cache
def kernels(dtype: str = "float32") -> SimpleNamespace:
    """Compile once per process and codec (numba is imported only here): float32 and float64
    share one set, each half dtype has its own, with its store and load inlined."""
    import numba
    import numpy as np

    from .._numba_half import HALF_DTYPES, codecs

    codec = codecs()[dtype]
    store, load = codec.store, codec.load
    native = dtype not in HALF_DTYPES

    njit = functools.partial(numba.njit, fastmath=FASTMATH, cache=False)

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
    def angles(index, p0, p1, tables, c, s):
        """Rows of c, s: cos/sin of positions offset + index[p0:p1]."""
        for i in range(p0, p1):
            angle_row(index, i, tables, c[i - p0], s[i - p0])

    @njit
    def gather(index, p0, p1, tables, c, s):
        """Rows of c, s copied from a cache's distinct columns, tables = (cos, sin) `[rows, n]`."""
        cos, sin = tables
        for i in range(p0, p1):
            cr, sr, row = c[i - p0], s[i - p0], index[i]
            for f in range(c.shape[1]):
                cr[f] = load(cos[row, f])
            for f in range(c.shape[1]):
                sr[f] = load(sin[row, f])

    @njit
    def rotate(x, out, p0, p1, c, s, interleaved):
        """Rows p0:p1 of one head `[seq, head_dim]`: pairs rotated, dims past 2 n copied.
        Row slices, the layout branch outside the row loop and no call per row: each of these
        cost 5-60% at head_dim 64 (calls, alias checks and loop setup per 256-byte row)."""
        n = c.shape[1]
        if interleaved:
            for i in range(p0, p1):
                xr, o, cr, sr = x[i], out[i], c[i - p0], s[i - p0]
                for f in range(n):
                    x1, x2 = load(xr[2 * f]), load(xr[2 * f + 1])
                    o[2 * f] = store(x1 * cr[f] - x2 * sr[f])
                    o[2 * f + 1] = store(x2 * cr[f] + x1 * sr[f])
        else:
            for i in range(p0, p1):   # two loops: each vectorises, one writing both did not
                xr, o, cr, sr = x[i], out[i], c[i - p0], s[i - p0]
                x1, x2, o1, o2 = xr[:n], xr[n:2 * n], o[:n], o[n:2 * n]
                for f in range(n):
                    o1[f] = store(load(x1[f]) * cr[f] - load(x2[f]) * sr[f])
                for f in range(n):
                    o2[f] = store(load(x2[f]) * cr[f] + load(x1[f]) * sr[f])
        if 2 * n < x.shape[1]:
            out[p0:p1, 2 * n:] = x[p0:p1, 2 * n:]

    @njit
    def cache_rows(out_c, out_s, index, p0, p1, tables, c, s, interleaved):
        """Rows p0:p1 of the cos/sin cache `[length, rot]`. "half": native rows are computed
        straight into their first copy (1.7x faster than through a scratch block) and copied;
        half-precision rows in one loop that stores each frequency's cos and sin twice (at 256
        bytes a row, six short loops through a scratch row cost more than the arithmetic).
        "interleaved": a scratch row c, s, then each frequency stored twice."""
        n = c.size
        if interleaved:
            for i in range(p0, p1):
                angle_row(index, i, tables, c, s)
                for f in range(n):
                    out_c[i, 2 * f] = store(c[f])
                    out_c[i, 2 * f + 1] = store(c[f])
                    out_s[i, 2 * f] = store(s[f])
                    out_s[i, 2 * f + 1] = store(s[f])
        elif native:
            for i in range(p0, p1):
                oc, os = out_c[i], out_s[i]
                angle_row(index, i, tables, oc[:n], os[:n])
                for f in range(n):
                    oc[f + n] = oc[f]
                for f in range(n):
                    os[f + n] = os[f]
        else:
            step, cc, sc, cf, sf = tables
            for i in range(p0, p1):
                q = index[i] // step
                a, b, x, y = cc[q], sc[q], cf[index[i] - q * step], sf[index[i] - q * step]
                c1, c2, s1, s2 = out_c[i, :n], out_c[i, n:2 * n], out_s[i, :n], out_s[i, n:2 * n]
                for f in range(n):
                    cv = store(a[f] * x[f] - b[f] * y[f])
                    sv = store(b[f] * x[f] + a[f] * y[f])
                    c1[f] = cv
                    c2[f] = cv
                    s1[f] = sv
                    s2[f] = sv

    @njit
    def chunks(count):
        """(chunks, blocks per chunk): one chunk per thread, so scratch is allocated once each."""
        nblocks = (count + BLOCK - 1) // BLOCK
        threads = max(1, min(numba.get_num_threads(), nblocks))
        return threads, (nblocks + threads - 1) // threads, nblocks

    def cache(out_c, out_s, index, tables, interleaved, work):
        """Row p of the cos/sin cache is position offset + index[p]; `work`: an empty array of
        the dtype the cos/sin are computed in."""
        nchunks, per, nblocks = chunks(index.size)
        for t in numba.prange(nchunks):
            c, s = np.empty(tables[1].shape[1], work.dtype), np.empty(tables[1].shape[1], work.dtype)
            for blk in range(t * per, min(nblocks, (t + 1) * per)):
                cache_rows(out_c, out_s, index, blk * BLOCK, min(index.size, (blk + 1) * BLOCK), tables,
                           c, s, interleaved)

    def sweep(fill, q, k, oq, ok, index, tables, n, interleaved, work):
        """q, k rotated: each block's cos/sin filled once (`fill`), then every (b, h) row of it."""
        batch, heads, seq, _ = q.shape
        nchunks, per, nblocks = chunks(seq)
        for t in numba.prange(nchunks):
            c, s = np.empty((BLOCK, n), work.dtype), np.empty((BLOCK, n), work.dtype)
            for blk in range(t * per, min(nblocks, (t + 1) * per)):
                p0, p1 = blk * BLOCK, min(seq, (blk + 1) * BLOCK)
                fill(index, p0, p1, tables, c, s)
                for b in range(batch):
                    for h in range(heads):
                        rotate(q[b, h], oq[b, h], p0, p1, c, s, interleaved)
                        rotate(k[b, h], ok[b, h], p0, p1, c, s, interleaved)

    return SimpleNamespace(angles=angles, gather=gather, cache=njit(parallel=True)(cache),
                           sweep=njit(parallel=True)(sweep))


def run(kernel, elements: int, *args) -> None:
    """kernel(*args) on every thread numba has, or on one for fewer than SERIAL_BELOW elements."""
    if elements >= SERIAL_BELOW:
        kernel(*args)
        return
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        kernel(*args)
    finally:
        numba.set_num_threads(threads)
