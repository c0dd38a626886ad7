"""The rotary cache of consecutive positions, a block of rows per call (registers nothing).

Why: a cache of positions 0..length-1 (what the `cache` workload builds) needs no index array,
and the rows of one coarse step share its table row (a, b). `_kernels.py`'s row loop found
each row's coarse and fine rows from the index, tested whether the next position followed,
and called the row intrinsic once per one or two rows, which computed eight row pointers and
ran a loop of n_freq / 16 steps: at rot 128 that scaffolding (scalar work, a four-trip loop,
its exit branch) cost about as much as the vector work of the row. Here one intrinsic writes
every row of a coarse step that a thread owns: a loop over row pairs whose body is the whole
row, unrolled at compile time for the spec's n_freq (`n` is a constant of the compiled code),
a and b loaded once per pair. The values are `_vector_rows.cache_step`'s, bit for bit: the
same multiply-adds, the same one rounding.

`cache_block(dtype, interleaved, n)` is an intrinsic `(oc, os, j, cc, sc, q, cf, sf, r, count)`
writing rows j..j+count-1 of the 2-D outputs from coarse row q and fine rows r..r+count-1.
"""

from __future__ import annotations

import functools

from ._vector_rows import LANES, WIDE, cache_step

#: Rows written per pass of the loop, sharing one load of a and b.
ROWS = 2


def supported(n: int) -> bool:
    """Whether a block covers n_freq frequencies with whole vectors (else the row loop of
    _kernels.py, with its scalar tail, writes the cache)."""
    return n > 0 and n % LANES == 0


def _steps(n: int) -> list[tuple[int, int]]:
    """(first frequency, lanes) of each step of a row: WIDE, then one LANES step if left."""
    whole = n // WIDE * WIDE
    return [(f, WIDE) for f in range(0, whole, WIDE)] + ([(whole, LANES)] if n - whole else [])


@functools.cache
def cache_block(dtype: str, interleaved: bool, n: int, away: bool = False):
    """The intrinsic writing `count` consecutive rows of one coarse step (see module doc);
    `away`: bfloat16 ties rounded away from zero (_vector_rows.AWAY)."""
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # captured: its file's stamp keys the on-disk cache
    step = cache_step
    if not supported(n):
        raise ValueError(f"n_freq must be a positive multiple of {LANES}, got {n}")

    @intrinsic
    def block(typingctx, oc, os, j, cc, sc, q, cf, sf, r, count):
        def codegen(context, builder, signature, args):
            t = signature.args
            ary = {k: context.make_array(t[k])(context, builder, args[k]) for k in (0, 1, 3, 4, 6, 7)}
            j_, q_, r_, count_ = (context.cast(builder, args[k], t[k], types.intp) for k in (2, 5, 8, 9))
            intp = j_.type

            def stride(k):   # a row's elements (C order: the first stride over the item size)
                size = intp(t[k].dtype.bitwidth // 8)
                return builder.sdiv(cgutils.unpack_tuple(builder, ary[k].strides)[0], size)

            strides = {k: stride(k) for k in ary}

            def at(k, row):
                return builder.gep(ary[k].data, [builder.mul(strides[k], row)])

            coarse = (at(3, q_), at(4, q_))

            def rows(first, many):
                outs = [(at(0, builder.add(j_, builder.add(first, intp(m)))),
                         at(1, builder.add(j_, builder.add(first, intp(m))))) for m in range(many)]
                fine = [(at(6, builder.add(r_, builder.add(first, intp(m)))),
                         at(7, builder.add(r_, builder.add(first, intp(m))))) for m in range(many)]
                for f, lanes in _steps(n):
                    step(builder, dtype, interleaved, lanes, intp(f), intp(n), outs, coarse, fine, vector_bits,
                         away)

            pairs = builder.sdiv(count_, intp(ROWS))
            with cgutils.for_range(builder, pairs) as loop:
                rows(builder.mul(loop.index, intp(ROWS)), ROWS)
            done = builder.mul(pairs, intp(ROWS))
            with cgutils.for_range(builder, builder.sub(count_, done)) as loop:
                rows(builder.add(done, loop.index), 1)
            return context.get_dummy_value()

        return types.void(oc, os, j, cc, sc, q, cf, sf, r, count), codegen

    return block


@functools.cache
def block_kernels(dtype: str, interleaved: bool, n: int, away: bool = False):
    """`cache(out_c, out_s, tables, stream, threads)`: rows 0..len(out_c)-1 of the cache (row p
    is position offset + p), threads taking contiguous runs of BLOCK rows (one fork/join), each
    coarse step's rows by one `cache_block` call; with `stream` > 0 rows go through an L1 scratch
    of that many rows, copied out by streaming stores and fenced once a thread, as
    _kernels.py's `vector_rows` does (numba.py's `streamed_rows`)."""
    import numba
    import numpy as np

    from .._numba_cache import njit as cached_njit
    from ..grid._copy import copy
    from ..table._tile import fence
    from ._kernels import BLOCK, FASTMATH, common

    block = cache_block(dtype, interleaved, n, away)
    nt_copy, sfence, chunks = copy(), fence(), common().chunks
    njit = cached_njit(fastmath=FASTMATH)

    def cache(out_c, out_s, tables, stream, threads):
        step, cc, sc, cf, sf = tables
        length, width = out_c.shape[0], out_c.shape[1]
        nchunks, per, nblocks = chunks((length + BLOCK - 1) // BLOCK, threads)
        for t in numba.prange(nchunks):
            p0, p1 = t * per * BLOCK, min(length, (t + 1) * per * BLOCK)
            bc, bs = np.empty((stream, width), out_c.dtype), np.empty((stream, width), out_s.dtype)
            into_c, into_s = (bc, bs) if stream else (out_c, out_s)
            base, room = (p0, stream) if stream else (0, length)   # row i goes to into_c[i - base]
            i = p0
            while i < p1:
                if i - base == room:
                    nt_copy(out_c, base * width, bc, 0, stream * width, True)
                    nt_copy(out_s, base * width, bs, 0, stream * width, True)
                    base = i
                q = i // step
                r = i - q * step
                count = min(step - r, p1 - i, room - (i - base))
                block(into_c, into_s, i - base, cc, sc, q, cf, sf, r, count)
                i += count
            if stream:
                nt_copy(out_c, base * width, bc, 0, (p1 - base) * width, True)
                nt_copy(out_s, base * width, bs, 0, (p1 - base) * width, True)
                sfence()   # this thread's streaming stores, ordered before the join

    return njit(parallel=True)(cache)
