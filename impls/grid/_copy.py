"""`copy(dst, dst_at, src, src_at, count, stream)`: `count` elements between two contiguous
arrays (registers nothing): by streaming stores when `stream` and the destination allows, else
by LLVM's memcpy.

Why: a grid's row is a few blocks copied from small per-axis tables, so the grid is a pure
write stream and its roof a bare fill of the same bytes. A grid larger than the last-level
cache goes to memory anyway; a cached store first reads each line it writes (the read for
ownership), a streaming store (VMOVNTDQ) does not: the same reason the table streams
(impls/table/_tile.py), and bench's streaming fill is the roof it is set against. A block is
streamed only when its destination is 32-byte aligned and a whole number of 32-byte vectors
(a cached store into a line that streaming stores also write is very slow); the caller fences
once per thread (`impls.table._tile.fence`). Offsets are in elements of the arrays' flat C
order; the caller keeps them in bounds.
"""

from __future__ import annotations

import functools

#: Bytes per streaming store (one AVX2 register), and the alignment it needs.
VECTOR = 32


@functools.cache
def copy():
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def copy_elements(typingctx, dst, dst_at, src, src_at, count, stream):
        if dst.dtype != src.dtype or dst.layout != "C" or src.layout != "C":
            return None
        sig = types.void(dst, dst_at, src, src_at, count, stream)

        def codegen(context, builder, signature, args):
            d_t, _, s_t, _, _, st_t = signature.args
            d = context.make_array(d_t)(context, builder, args[0])
            s = context.make_array(s_t)(context, builder, args[2])
            intp = context.get_value_type(types.intp)
            at_d, at_s, n = (context.cast(builder, args[i], signature.args[i], types.intp)
                             for i in (1, 3, 4))
            item = context.get_abi_sizeof(context.get_data_type(d_t.dtype))
            to, frm = builder.gep(d.data, [at_d]), builder.gep(s.data, [at_s])
            nbytes = builder.mul(n, ir.Constant(intp, item))
            mask = ir.Constant(intp, VECTOR - 1)
            whole = builder.icmp_signed("==", builder.and_(builder.or_(builder.ptrtoint(to, intp), nbytes),
                                                           mask), ir.Constant(intp, 0))
            streaming = builder.and_(context.cast(builder, args[5], st_t, types.boolean), whole)
            with builder.if_else(streaming) as (streamed, cached):
                with streamed:
                    vec = ir.VectorType(ir.IntType(32), VECTOR // 4)
                    src_v = builder.bitcast(frm, vec.as_pointer())
                    dst_v = builder.bitcast(to, vec.as_pointer())
                    with cgutils.for_range(builder, builder.sdiv(nbytes, ir.Constant(intp, VECTOR))) as v:
                        value = builder.load(builder.gep(src_v, [v.index]), align=item)
                        stored = builder.store(value, builder.gep(dst_v, [v.index]), align=VECTOR)
                        stored.set_metadata("nontemporal", builder.module.add_metadata(
                            [ir.Constant(ir.IntType(32), 1)]))
                with cached:
                    cgutils.raw_memcpy(builder, to, frm, n, item)
            return context.get_dummy_value()

        return sig, codegen

    return copy_elements
