"""The table's row loop by frequency pairs: one angle addition gives a sine and its cosine.

`pair_tile(store, layout, cos_first)(out, row0, X, Y, j0, rows, S, C, stream)` writes, for
i < rows and every frequency k < n = d / 2, with x = X[j0 + i, k], y = Y[j0 + i, k]
(cos and sin of the step within the block) and S, C the block start's sin and cos,

    sin = fma(S, x, C * y)        cos = fma(C, x, -(S * y))

each rounded once into the output's dtype, at columns 2k and 2k + 1 (`interleaved`) or k and
n + k (`concat`), cos first if `cos_first`.

Why: the per-column tile (impls/table/_tile.py) computes every column from its own P, Q, X, Y,
although a sine column and its cosine column share their angle: 8 vector loads and 4 vector
floating-point operations per 16 outputs. Here 8 frequencies' X, Y, S, C (4 loads) give 16
outputs with the same 4 operations: half the loads, and X, Y (the L2-resident tables) half
the size. The row loop alone (one thread, an L1 buffer): bfloat16 0.14-0.15 -> 0.10-0.12 ns an
element, float16 0.12-0.14 -> 0.09-0.11 (docs/fast.md).
The error is the per-column tile's: the same float32 tables and two roundings, then one into
the output dtype (the cosine's `fma(C, x, -(S y))` is the column tile's `fma(P, X, Q Y)` with
P = C, Q = -S).

bfloat16, interleaved: each 32-bit output word is the sine's rounded upper half beside the
cosine's (one shift, one word blend: the paired store without its column permutation).
float16: two `fptrunc`s and a word interleave. Streaming stores as the column tile's: only
when every vector is 32-byte aligned; the caller fences once per thread.
"""

from __future__ import annotations

import functools

from ._tile import STREAM_ALIGN, row_arguments

#: Frequencies per step: 8 float32 lanes, 16 output columns.
LANES = 8
LAYOUTS = ("interleaved", "concat")


def _round_bf16(builder, value, i32x8):
    """<8 x float> of finite values -> <8 x i32> with the bfloat16 bits (round to nearest even)
    in the upper halves (lower halves garbage): u + 0x7FFF + bit 16, as `vector_bits`."""
    from llvmlite import ir

    def splat(x):
        return ir.Constant(i32x8, [x] * LANES)

    u = builder.bitcast(value, i32x8)
    even = builder.icmp_unsigned("==", builder.and_(u, splat(0x10000)), splat(0))
    return builder.add(builder.add(u, splat(0x8000)), builder.sext(even, i32x8))


def _interleave(builder, low, high, lanes):
    """[low0, high0, low1, high1, ...] of two <lanes x T> vectors."""
    from llvmlite import ir

    order = [i // 2 + (lanes if i % 2 else 0) for i in range(2 * lanes)]
    return builder.shuffle_vector(low, high, ir.Constant(ir.VectorType(ir.IntType(32), 2 * lanes), order))


def _bits(builder, value, store: str):
    """<8 x float> -> what a `concat` store writes: float32 itself, or 8 half-precision bit patterns."""
    from llvmlite import ir

    i32x8 = ir.VectorType(ir.IntType(32), LANES)
    if store == "float16":
        return builder.bitcast(builder.fptrunc(value, ir.VectorType(ir.HalfType(), LANES)),
                               ir.VectorType(ir.IntType(16), LANES))
    if store == "bfloat16":
        high = builder.lshr(_round_bf16(builder, value, i32x8), ir.Constant(i32x8, [16] * LANES))
        return builder.trunc(high, ir.VectorType(ir.IntType(16), LANES))
    return value


def _pair_words(builder, first, second, store: str):
    """Two <8 x float> (the even and the odd columns) -> the 16 interleaved outputs as one vector."""
    from llvmlite import ir

    if store == "bfloat16":   # one word blend: first's upper half low, second's upper half high
        i32x8 = ir.VectorType(ir.IntType(32), LANES)
        lo = builder.lshr(_round_bf16(builder, first, i32x8), ir.Constant(i32x8, [16] * LANES))
        hi = builder.and_(_round_bf16(builder, second, i32x8), ir.Constant(i32x8, [-65536] * LANES))
        return builder.or_(lo, hi)
    return _interleave(builder, _bits(builder, first, store), _bits(builder, second, store), LANES)


@functools.cache
def pair_tile(store: str, layout: str, cos_first: bool):
    """The intrinsic for one output dtype ("float32", "float16" or "bfloat16" into uint16 bits),
    column layout (LAYOUTS) and function order; n = d / 2 must be a multiple of LANES."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    words, bits, arguments = _pair_words, _bits, row_arguments   # in the closure: the cache key

    @intrinsic
    def pair_rows(typingctx, out, row0, X, Y, j0, rows, S, C, stream):
        sig = types.void(out, row0, X, Y, j0, rows, S, C, stream)

        def codegen(context, builder, signature, args):
            o_t, st_t = signature.args[0], signature.args[8]
            o, xa, ya, sa, ca, row0_, j0_, rows_ = arguments(context, builder, signature, args)
            intp = context.get_value_type(types.intp)
            vec = ir.VectorType(ir.FloatType(), LANES)
            oitem = context.get_abi_sizeof(context.get_value_type(o_t.dtype))
            ostride = cgutils.unpack_tuple(builder, o.strides)[0]
            xstride = cgutils.unpack_tuple(builder, xa.strides)[0]
            n = builder.sdiv(cgutils.unpack_tuple(builder, o.shape)[1], ir.Constant(intp, 2))
            i8p = ir.IntType(8).as_pointer()
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec] * 3),
                                                 f"llvm.fma.v{LANES}f32")

            def const(value):
                return ir.Constant(intp, value)

            aligned = builder.icmp_signed("==", builder.and_(
                builder.or_(builder.ptrtoint(o.data, intp), ostride), const(STREAM_ALIGN - 1)), const(0))
            if layout == "concat":   # the second half starts n columns on: aligned too?
                aligned = builder.and_(aligned, builder.icmp_signed("==", builder.and_(
                    builder.mul(n, const(oitem)), const(STREAM_ALIGN - 1)), const(0)))
            stream_ = builder.and_(context.cast(builder, args[8], st_t, types.boolean), aligned)
            groups = builder.sdiv(n, const(LANES))

            def at(base, offset):
                return builder.gep(builder.bitcast(base, i8p), [offset])

            def load(base, offset):
                return builder.load(builder.bitcast(at(base, offset), vec.as_pointer()), align=4)

            def put(value, dst, streaming):   # a streamed vector sits on its own size (<= 32 bytes)
                size = value.type.count * context.get_abi_sizeof(value.type.element)
                stored = builder.store(value, builder.bitcast(dst, value.type.as_pointer()),
                                       align=min(STREAM_ALIGN, size) if streaming else oitem)
                if streaming:
                    stored.set_metadata("nontemporal", builder.module.add_metadata(
                        [ir.Constant(ir.IntType(32), 1)]))

            def write(src_row, dst_row, k, streaming):
                at_k = builder.mul(k, const(4))
                s, c = load(sa.data, at_k), load(ca.data, at_k)
                src = builder.add(src_row, at_k)
                x, y = load(xa.data, src), load(ya.data, src)
                sin = builder.call(fma, [s, x, builder.fmul(c, y)])
                cos = builder.call(fma, [c, x, builder.fneg(builder.fmul(s, y))])
                first, second = (cos, sin) if cos_first else (sin, cos)
                if layout == "interleaved":
                    put(words(builder, first, second, store),
                        at(o.data, builder.add(dst_row, builder.mul(k, const(2 * oitem)))), streaming)
                else:
                    put(bits(builder, first, store), at(o.data, builder.add(dst_row, builder.mul(k, const(oitem)))),
                        streaming)
                    put(bits(builder, second, store),
                        at(o.data, builder.add(dst_row, builder.mul(builder.add(k, n), const(oitem)))), streaming)

            with cgutils.for_range(builder, rows_) as r:
                src_row = builder.mul(builder.add(j0_, r.index), xstride)
                dst_row = builder.mul(builder.add(row0_, r.index), ostride)
                with builder.if_else(stream_) as (streamed, cached):
                    for flag, branch in ((True, streamed), (False, cached)):
                        with branch:
                            with cgutils.for_range(builder, groups) as g:
                                write(src_row, dst_row, builder.mul(g.index, const(LANES)), flag)
            return context.get_dummy_value()

        return sig, codegen

    return pair_rows
