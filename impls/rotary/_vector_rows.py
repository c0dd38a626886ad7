"""A half-precision cache row written by explicit 8-lane vector IR (registers nothing).

Why: a cache row is only n_freq (64 at rot 128) values of cos and of sin, each stored twice.
Written as Numba loops, LLVM guards every loop of every row with runtime alias checks between
the output row and the four table rows (Numba arrays carry no `noalias`), plus a prologue and an
epilogue: at rot 128 that per-row scaffolding, not the arithmetic or the stores, was most of a
half-precision cache's time (3-5x a fill, docs/fast.md). Here one loop per row, emitted as IR,
loads 8 lanes of each table row, forms cos = a x - b y and sin = b x + a y in float32 (the same
`contract` multiply-adds as the Numba loops: bit-identical), rounds each once to the half dtype
and stores all four copies ("half": columns f and n + f; "interleaved": 2f and 2f + 1, lanes
duplicated by a shuffle): no alias checks, no copy pass, no scalar tail unless n_freq % 8.

`cache_row(dtype, interleaved)` is an intrinsic `(oc, os, a, b, x, y) -> lanes done`: the
caller stores frequencies from `lanes done` to n_freq itself (none when n_freq % 8 == 0).
"""

from __future__ import annotations

import functools

#: float32 lanes per vector: 256-bit AVX2 (this CPU has no AVX-512; LLVM splits wider vectors).
LANES = 8
#: `contract` only, as the Numba kernels' fastmath: a * b + c may fuse into an FMA, no reassociation.
CONTRACT = ("contract",)


@functools.cache
def cache_row(dtype: str, interleaved: bool):
    """The intrinsic writing one cache row of a half dtype (`dtype`) in one layout."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # captured: its file's stamp keys the on-disk cache

    f32v = ir.VectorType(ir.FloatType(), LANES)
    pairs = ir.Constant(ir.VectorType(ir.IntType(32), 2 * LANES), [k // 2 for k in range(2 * LANES)])

    def load(builder, ptr, at):
        return builder.load(builder.bitcast(builder.gep(ptr, [at]), f32v.as_pointer()), align=4)

    def put(builder, ptr, at, bits):
        if interleaved:   # each lane twice: columns 2f, 2f + 1
            bits = builder.shuffle_vector(bits, bits, pairs)
            at = builder.shl(at, at.type(1))
        builder.store(bits, builder.bitcast(builder.gep(ptr, [at]), bits.type.as_pointer()), align=2)

    @intrinsic
    def row(typingctx, oc, os, a, b, x, y):
        def codegen(context, builder, signature, args):
            arrays = [context.make_array(t)(context, builder, v) for t, v in zip(signature.args, args)]
            outc, outs, pa, pb, px, py = (arr.data for arr in arrays)
            n = arrays[2].nitems
            done = builder.mul(builder.sdiv(n, n.type(LANES)), n.type(LANES))
            with cgutils.for_range(builder, builder.sdiv(n, n.type(LANES))) as loop:
                f = builder.mul(loop.index, n.type(LANES))
                va, vb, vx, vy = (load(builder, p, f) for p in (pa, pb, px, py))
                c = builder.fsub(builder.fmul(va, vx, flags=CONTRACT), builder.fmul(vb, vy, flags=CONTRACT),
                                 flags=CONTRACT)
                s = builder.fadd(builder.fmul(vb, vx, flags=CONTRACT), builder.fmul(va, vy, flags=CONTRACT),
                                 flags=CONTRACT)
                cb, sb = vector_bits(builder, c, dtype), vector_bits(builder, s, dtype)
                if interleaved:
                    put(builder, outc, f, cb)
                    put(builder, outs, f, sb)
                else:
                    second = builder.add(f, n)
                    for ptr, bits in ((outc, cb), (outs, sb)):
                        put(builder, ptr, f, bits)
                        put(builder, ptr, second, bits)
            return done

        return types.intp(oc, os, a, b, x, y), codegen

    return row


def _half_value(builder, bits, dtype: str):
    """<LANES x i16> -> <LANES x float>: the value of float16 bits (fpext) or of bfloat16 bits (a
    16-bit shift): exact, as the codecs' loads."""
    from llvmlite import ir

    if dtype == "float16":
        return builder.fpext(builder.bitcast(bits, ir.VectorType(ir.HalfType(), LANES)),
                             ir.VectorType(ir.FloatType(), LANES))
    i32 = ir.VectorType(ir.IntType(32), LANES)
    return builder.bitcast(builder.shl(builder.zext(bits, i32), ir.Constant(i32, [16] * LANES)),
                           ir.VectorType(ir.FloatType(), LANES))


@functools.cache
def rotation_row(dtype: str, interleaved: bool):
    """The intrinsic `(x, c, s) -> lanes done` rotating one head's row of a half dtype where it
    lies: each pair (p, q) of frequency f ("half": columns f and n + f; "interleaved": 2f and
    2f + 1) becomes (p c - q s, q c + p s) in float32, rounded once, as the apply kernels'
    scalar loop does; n = c.size, and frequencies from `lanes done` on are left to the caller.
    Both of a pair's values are loaded before either is stored, so in place is safe."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # captured: its file's stamp keys the on-disk cache

    f32v, i16 = ir.VectorType(ir.FloatType(), LANES), ir.IntType(16)
    i32 = ir.IntType(32)
    evens = ir.Constant(ir.VectorType(i32, LANES), [2 * k for k in range(LANES)])
    odds = ir.Constant(ir.VectorType(i32, LANES), [2 * k + 1 for k in range(LANES)])
    zipped = ir.Constant(ir.VectorType(i32, 2 * LANES), [k // 2 + (k % 2) * LANES for k in range(2 * LANES)])

    def vector_at(builder, ptr, at, lanes, element):
        return builder.bitcast(builder.gep(ptr, [at]), ir.VectorType(element, lanes).as_pointer())

    @intrinsic
    def row(typingctx, x, c, s):
        def codegen(context, builder, signature, args):
            arrays = [context.make_array(t)(context, builder, v) for t, v in zip(signature.args, args)]
            px, pc, ps = (arr.data for arr in arrays)
            n = arrays[1].nitems
            vectors = builder.sdiv(n, n.type(LANES))
            with cgutils.for_range(builder, vectors) as loop:
                f = builder.mul(loop.index, n.type(LANES))
                vc = builder.load(vector_at(builder, pc, f, LANES, ir.FloatType()), align=4)
                vs = builder.load(vector_at(builder, ps, f, LANES, ir.FloatType()), align=4)
                if interleaved:
                    at = vector_at(builder, px, builder.shl(f, f.type(1)), 2 * LANES, i16)
                    both = builder.load(at, align=2)
                    pb, qb = (builder.shuffle_vector(both, both, m) for m in (evens, odds))
                else:
                    first = vector_at(builder, px, f, LANES, i16)
                    second = vector_at(builder, px, builder.add(f, n), LANES, i16)
                    pb, qb = builder.load(first, align=2), builder.load(second, align=2)
                p, q = _half_value(builder, pb, dtype), _half_value(builder, qb, dtype)
                fm = {"flags": CONTRACT}
                new_p = builder.fsub(builder.fmul(p, vc, **fm), builder.fmul(q, vs, **fm), **fm)
                new_q = builder.fadd(builder.fmul(q, vc, **fm), builder.fmul(p, vs, **fm), **fm)
                pb, qb = vector_bits(builder, new_p, dtype), vector_bits(builder, new_q, dtype)
                if interleaved:
                    builder.store(builder.shuffle_vector(pb, qb, zipped), at, align=2)
                else:
                    builder.store(pb, first, align=2)
                    builder.store(qb, second, align=2)
            return builder.mul(vectors, n.type(LANES))

        return types.intp(x, c, s), codegen

    return row
