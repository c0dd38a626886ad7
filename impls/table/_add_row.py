"""A forward's row as explicit LLVM vectors: out[n, p, :] = x[n, p, :] + pe, rounded once
(registers nothing).

`add_row(store)(out, n, p, x, pe, stream)`: `x` and `out` hold the dtype's storage (uint16 bits
for a half dtype), `pe` the row in the arithmetic's dtype. Each lane widens x (a 16-bit shift
for bfloat16, `fpext` for float16), adds pe's lane and is rounded and stored as the table's
tile stores (impls/table/_tile.py), NaN kept quiet since x may hold any value: the scalar
codec's value bit for bit. `WIDTH` lanes at a time, the last vector overlapped; d < WIDTH is
left to the caller.

Why: the Numba loop over a row (`store(load(x) + pe)`) kept each row behind runtime alias
checks and cached stores; a forward's output (the batch times the table) is larger than the
L3 at the default sizes, so streaming stores (when `stream`, the row 32-byte aligned and d a
multiple of WIDTH) skip the read for ownership, as the table does. The caller fences.
"""

from __future__ import annotations

import functools

from .._numba_half import HALF_DTYPES, vector_bits
from ._tile import STREAM_ALIGN, WIDTH, _vector_store


def _widen(builder, bits, store: str):
    """<WIDTH x i16> of a half dtype -> <WIDTH x float>, exactly."""
    from llvmlite import ir

    f32 = ir.VectorType(ir.FloatType(), WIDTH)
    if store == "float16":
        return builder.fpext(builder.bitcast(bits, ir.VectorType(ir.HalfType(), WIDTH)), f32)
    i32 = ir.VectorType(ir.IntType(32), WIDTH)
    wide = builder.shl(builder.zext(bits, i32), ir.Constant(i32, [16] * WIDTH))
    return builder.bitcast(wide, f32)


def _rounding(builder, value, dtype, finite=False):
    """vector_bits with the NaN case kept whatever the store says: x may be NaN."""
    return vector_bits(builder, value, dtype)


@functools.cache
def add_row(store: str):
    """The intrinsic for one storage ("native": float32 or float64; "float16", "bfloat16")."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    widen, rounding, store_vector = _widen, _rounding, _vector_store   # in the cache key

    @intrinsic
    def add(typingctx, out, n, p, x, pe, stream):
        sig = types.void(out, n, p, x, pe, stream)

        def codegen(context, builder, signature, args):
            o_t, _, _, x_t, pe_t, s_t = signature.args
            o = context.make_array(o_t)(context, builder, args[0])
            xa = context.make_array(x_t)(context, builder, args[3])
            pa = context.make_array(pe_t)(context, builder, args[4])
            intp = context.get_value_type(types.intp)
            n_, p_ = (context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2))
            work = context.get_value_type(pe_t.dtype)
            element = context.get_value_type(o_t.dtype)
            item, oitem = context.get_abi_sizeof(work), context.get_abi_sizeof(element)
            vec = ir.VectorType(work, WIDTH)
            i8p = ir.IntType(8).as_pointer()

            def const(value):
                return ir.Constant(intp, value)

            def row_offset(array):
                s0, s1, _ = cgutils.unpack_tuple(builder, array.strides)
                return builder.add(builder.mul(n_, s0), builder.mul(p_, s1))

            d = cgutils.unpack_tuple(builder, o.shape)[2]
            o_row = builder.gep(builder.bitcast(o.data, i8p), [row_offset(o)])
            x_row = builder.gep(builder.bitcast(xa.data, i8p), [row_offset(xa)])
            aligned = builder.icmp_signed("==", builder.and_(builder.ptrtoint(o_row, intp),
                                                             const(STREAM_ALIGN - 1)), const(0))
            whole = builder.icmp_signed("==", builder.srem(d, const(WIDTH)), const(0))
            stream_ = builder.and_(context.cast(builder, args[5], s_t, types.boolean),
                                   builder.and_(aligned, whole))
            groups = builder.sdiv(d, const(WIDTH))

            def write(col, streaming):
                lanes = builder.load(builder.bitcast(builder.gep(x_row, [builder.mul(col, const(oitem))]),
                                                     ir.VectorType(element, WIDTH).as_pointer()), align=oitem)
                value = widen(builder, lanes, store) if store in HALF_DTYPES else lanes
                pe_v = builder.load(builder.bitcast(builder.gep(builder.bitcast(pa.data, i8p),
                                                                [builder.mul(col, const(item))]),
                                                    vec.as_pointer()), align=item)
                dst = builder.gep(o_row, [builder.mul(col, const(oitem))])
                store_vector(builder, builder.fadd(value, pe_v), dst, store, element, oitem, streaming,
                             rounding)

            with builder.if_else(stream_) as (streamed, cached):
                with streamed:
                    with cgutils.for_range(builder, groups) as g:
                        write(builder.mul(g.index, const(WIDTH)), True)
                with cached:
                    with cgutils.for_range(builder, groups) as g:
                        write(builder.mul(g.index, const(WIDTH)), False)
            tail = builder.and_(builder.icmp_signed("<", builder.mul(groups, const(WIDTH)), d),
                                builder.icmp_signed(">=", d, const(WIDTH)))
            with builder.if_then(tail):
                write(builder.sub(d, const(WIDTH)), False)   # overlapped tail
            return context.get_dummy_value()

        return sig, codegen

    return add
