"""The table's element loop as explicit LLVM vectors, with streaming stores (registers nothing).

`tile(store)(out, row0, X, Y, j0, rows, P, Q, stream)` writes, for i < rows and every column c,
out[row0 + i, c] = fma(P[c], X[j0 + i, c], Q[c] Y[j0 + i, c]) rounded once into the output's
dtype: the scalar loop's value and rounding (FMA contraction), row after row, `WIDTH` columns
at a time. A d that is not a multiple of WIDTH ends with one overlapped vector at d - WIDTH;
a d < WIDTH is left to the caller.

Why IR and not a Numba loop: (1) Numba's loop had LLVM guard every row by runtime alias checks
(the output might overlap the tables) and kept a bfloat16 row at 8 lanes with a NaN blend the
table never needs (sines and cosines are finite), so the half dtypes cost 2-2.7x a fill;
(2) a store can be marked `!nontemporal` (MOVNTPS and kin), which a Numba loop cannot say. A
streaming store skips the read for ownership of the output's line: a table larger than the
last-level cache moves half the bytes a cached store moves (a cached fill reads every line
before writing it). `stream` asks for them; they are used only when every vector's address is
32-byte aligned (output start and row stride) and d is a multiple of WIDTH: a cached store
into a line that streaming stores also write made the whole table 7x slower (measured). The
caller fences (`fence()`, an `sfence`) once per thread after its last tile, as the streaming
fill does: fenced after every tile (every 32 rows), each thread stalled until its stores had
drained to memory, and the 2-thread table ran at a one-thread fill's bandwidth (docs/fast.md).

Column order matters: a variant that reused P, Q in registers down several rows (writing a
column strip of 4-32 rows, then the next strip) was 1.3-2x slower than row order: the
hardware's store streams want each row written front to back (docs/fast.md).

bfloat16: round to nearest even in 32-bit lanes, as `bf16_bits` in impls/_numba_half.py, without
its NaN case (no table value is NaN). A bfloat16 table whose d is a multiple of WIDTH uses the
paired store (PAIRED): its callers lay every per-column input out in `paired_order` (even
columns of each group of 16 in lanes 0-7, odd ones in 8-15), so one shift and a word blend
place each pair of results, where the plain store spends four shifts, a pack and a permute
(the row loop alone, one thread: 0.205 -> 0.177 ns an element; the loop is compute-bound). float16: `fptrunc` (F16C). A float64 arithmetic with a
half output goes through float32 first, as the scalar codecs do.
"""

from __future__ import annotations

import functools

import numpy as np

from .._numba_half import HALF_DTYPES, vector_bits

#: Lanes per vector: one AVX2 register of float32 (two of float64; LLVM splits them).
WIDTH = 16
#: What a streaming (non-temporal) vector store's address must be a multiple of (AVX2: 32 bytes).
STREAM_ALIGN = 32


#: The paired bfloat16 store's column order within each WIDTH group: lanes 0-7 hold the group's
#: even columns, lanes 8-15 its odd ones (`paired_order`).
PAIRED = "bfloat16-paired"


def paired_order(d: int) -> np.ndarray:
    """The column permutation a paired tile's per-column inputs are laid out in (d % WIDTH == 0)."""
    lanes = np.r_[0:WIDTH:2, 1:WIDTH:2]
    return (np.arange(0, d, WIDTH)[:, None] + lanes).reshape(-1)


def _paired_bits(builder, value):
    """<16 x float> of finite values (lanes 0-7 columns 0, 2, .., 14, lanes 8-15 columns 1, 3, ..)
    -> the 16 bfloat16 bits in column order, rounded to nearest even as `vector_bits`: the
    rounding without a shift (bit 16 by a compare), then one shift and one word blend put each
    pair side by side, where the plain store takes four shifts, a pack and a permute."""
    from llvmlite import ir

    i32 = ir.IntType(32)

    def splat(x, n=WIDTH):
        return ir.Constant(ir.VectorType(i32, n), [x] * n)

    u = builder.bitcast(value, ir.VectorType(i32, WIDTH))
    even = builder.icmp_unsigned("==", builder.and_(u, splat(0x10000)), splat(0))   # lsb 0: add 0x7FFF
    rounded = builder.add(builder.add(u, splat(0x8000)), builder.sext(even, u.type))
    half = WIDTH // 2

    def lanes(first):
        return builder.shuffle_vector(rounded, rounded, ir.Constant(ir.VectorType(i32, half),
                                                                    list(range(first, first + half))))

    words = builder.or_(builder.lshr(lanes(0), splat(16, half)), builder.and_(lanes(half), splat(-65536, half)))
    return builder.bitcast(words, ir.VectorType(ir.IntType(16), WIDTH))


def _vector_store(builder, value, pointer, store: str, element, align: int, streaming: bool,
                  rounding=vector_bits):
    """Round a <WIDTH x float|double> vector into the output's dtype and store it (unaligned);
    `element`: the output array's LLVM element type (uint16 bits for a half dtype)."""
    from llvmlite import ir

    narrow = element if store == "native" else ir.FloatType()   # half: via float32, as the codecs
    if value.type.element != narrow:
        value = builder.fptrunc(value, ir.VectorType(narrow, WIDTH))
    if store == PAIRED:
        value = _paired_bits(builder, value)
    elif store in HALF_DTYPES:   # no table value is NaN: the bfloat16 rounding skips that case
        value = rounding(builder, value, store, finite=True)
    stored = builder.store(value, builder.bitcast(pointer, value.type.as_pointer()),
                           align=STREAM_ALIGN if streaming else align)
    if streaming:   # MOVNTPS and kin: no read for ownership, the line goes to memory
        stored.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


def row_arguments(context, builder, signature, args):
    """A row intrinsic's (out, row0, X, Y, j0, rows, P, Q, stream) as LLVM values: the arrays
    (out, X, Y, P, Q), then row0, j0, rows as intp (this tile's and impls/table/_pair_tile.py's)."""
    from numba.core import types

    o_t, x_t, p_t = signature.args[0], signature.args[2], signature.args[6]
    arrays = [context.make_array(t)(context, builder, args[i])
              for i, t in ((0, o_t), (2, x_t), (3, x_t), (6, p_t), (7, p_t))]
    counts = [context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 4, 5)]
    return (*arrays, *counts)


@functools.cache
def tile(store: str):
    """The intrinsic for one output dtype (`store`: "native" for float32 and float64, whose
    arithmetic dtype is the output's or wider; "float16" or "bfloat16" into uint16 bits;
    PAIRED: bfloat16 from inputs in `paired_order`, for d a multiple of WIDTH only)."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    # held in the intrinsic's closure, so that the on-disk cache's key (impls/_numba_cache.py)
    # follows this module and impls/_numba_half.py, not only the file the intrinsic is in
    store_vector, rounding, arguments = _vector_store, vector_bits, row_arguments

    @intrinsic
    def tile_rows(typingctx, out, row0, X, Y, j0, rows, P, Q, stream):
        sig = types.void(out, row0, X, Y, j0, rows, P, Q, stream)

        def codegen(context, builder, signature, args):
            o_t, x_t, s_t = signature.args[0], signature.args[2], signature.args[8]
            o, xa, ya, pa, qa, row0_, j0_, rows_ = arguments(context, builder, signature, args)
            intp = context.get_value_type(types.intp)
            work = context.get_value_type(x_t.dtype)
            element = context.get_value_type(o_t.dtype)
            vec = ir.VectorType(work, WIDTH)
            item, oitem = context.get_abi_sizeof(work), context.get_abi_sizeof(element)
            ostride = cgutils.unpack_tuple(builder, o.strides)[0]
            xstride = cgutils.unpack_tuple(builder, xa.strides)[0]
            d = cgutils.unpack_tuple(builder, o.shape)[1]
            i8p = ir.IntType(8).as_pointer()
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec] * 3),
                                                 f"llvm.fma.v{WIDTH}f{8 * item}")

            def const(value):
                return ir.Constant(intp, value)

            # streaming stores need every vector's address 32-byte aligned: the output's start
            # and row stride aligned and whole vectors per row (a cached store into a line that
            # streaming stores also write makes both slow: 10x, measured)
            start_or_stride = builder.or_(builder.ptrtoint(o.data, intp), ostride)
            aligned = builder.icmp_signed("==", builder.and_(start_or_stride, const(STREAM_ALIGN - 1)),
                                          const(0))
            whole = builder.icmp_signed("==", builder.srem(d, const(WIDTH)), const(0))
            stream_ = builder.and_(context.cast(builder, args[8], s_t, types.boolean),
                                   builder.and_(aligned, whole))
            groups = builder.sdiv(d, const(WIDTH))
            end = builder.mul(groups, const(WIDTH))

            def at(base, offset):
                return builder.gep(builder.bitcast(base, i8p), [offset])

            def load(base, offset):
                return builder.load(builder.bitcast(at(base, offset), vec.as_pointer()), align=item)

            def write(src_row, dst_row, col, streaming):
                at_col = builder.mul(col, const(item))
                p, q = load(pa.data, at_col), load(qa.data, at_col)
                src = builder.add(src_row, at_col)
                value = builder.call(fma, [p, load(xa.data, src), builder.fmul(q, load(ya.data, src))])
                dst = at(o.data, builder.add(dst_row, builder.mul(col, const(oitem))))
                store_vector(builder, value, dst, store, element, oitem, streaming, rounding)

            with cgutils.for_range(builder, rows_) as r:
                src_row = builder.mul(builder.add(j0_, r.index), xstride)
                dst_row = builder.mul(builder.add(row0_, r.index), ostride)
                with builder.if_else(stream_) as (streamed, cached):
                    with streamed:
                        with cgutils.for_range(builder, groups) as g:
                            write(src_row, dst_row, builder.mul(g.index, const(WIDTH)), True)
                    with cached:
                        with cgutils.for_range(builder, groups) as g:
                            write(src_row, dst_row, builder.mul(g.index, const(WIDTH)), False)
                tail = builder.and_(builder.icmp_signed("<", end, d),
                                    builder.icmp_signed(">=", d, const(WIDTH)))
                with builder.if_then(tail):
                    write(src_row, dst_row, builder.sub(d, const(WIDTH)), False)   # overlapped tail
            return context.get_dummy_value()

        return sig, codegen

    return tile_rows


@functools.cache
def fence():
    """`sfence()`: this thread's streaming stores are ordered before what it does next. A
    thread calls it once, after its last tile: one after every block of 32 rows made each
    thread wait for its stores to drain to memory 2048 times per table (see module doc)."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def sfence(typingctx):
        def codegen(context, builder, signature, args):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse.sfence")
            builder.call(fn, [])
            return context.get_dummy_value()

        return types.void(), codegen

    return sfence
