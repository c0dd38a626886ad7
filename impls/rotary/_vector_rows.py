"""Half-precision cache rows and apply rotations written as explicit vector IR (registers nothing).

Why: a cache row is only n_freq (64 at rot 128) values of cos and of sin, each stored twice.
Written as Numba loops, LLVM guards every loop of every row with runtime alias checks between
the output row and the four table rows (Numba arrays carry no `noalias`), plus a prologue and an
epilogue: at rot 128 that per-row scaffolding, not the arithmetic or the stores, was most of a
half-precision cache's time (3-5x a fill, docs/fast.md). Here one loop per row, emitted as IR,
loads 16 lanes (two AVX2 registers) of each table row, forms cos = a x - b y and sin = b x + a y
in float32 (the same `contract` multiply-adds as the Numba loops: bit-identical), rounds each
once to the half dtype (no NaN check: the tables are finite and at most 1 in magnitude) and
stores all four copies as 32-byte stores ("half": columns f and n + f; "interleaved": 2f and
2f + 1, lanes duplicated by a shuffle): no alias checks, no copy pass, no scalar tail unless
n_freq % 8. Two rows that share a coarse row are written by one call, a and b loaded once. float32 rows are
the same loop without the rounding.

`cache_row(dtype, interleaved, rows)` is an intrinsic `(oc, os, a, b, x, y) -> lanes done`: the
caller stores frequencies from `lanes done` to n_freq itself (none when n_freq % 8 == 0).
"""

from __future__ import annotations

import functools

import numpy as np

#: float32 lanes per vector: 256-bit AVX2 (this CPU has no AVX-512; LLVM splits wider vectors).
LANES = 8
#: float32 lanes a cache row's main step: two registers of each table, so each of the four copies
#: is one 32-byte store of 16 half values (8 lanes: 16-byte stores and twice the loop steps).
WIDE = 16
#: `contract` only, as the Numba kernels' fastmath: a * b + c may fuse into an FMA, no reassociation.
CONTRACT = ("contract",)
#: Dtypes whose cache rows read their tables in `wide_order`: bfloat16's rounding then ends in
#: one word blend per 16 values instead of two shifts, a pack and a lane permute.
PAIRED = ("bfloat16",)


def wide_order(n: int) -> np.ndarray:
    """The column order a PAIRED dtype's cache tables are kept in (n_freq columns): within each
    whole WIDE step, the even frequencies, then the odd ones; the columns after, as they are."""
    order = np.arange(n)
    whole = n // WIDE * WIDE
    groups = order[:whole].reshape(-1, WIDE)
    order[:whole] = np.concatenate([groups[:, 0::2], groups[:, 1::2]], axis=1).reshape(-1)
    return order


def _paired_bf16_bits(builder, value, away: bool = False):
    """<WIDE x float> whose first half holds even frequencies and second half the odd ones
    (`wide_order`) -> <WIDE x i16> bfloat16 bits in frequency order, rounded to nearest even as
    `vector_bits` (finite values), or with `away` to nearest, ties away from zero (`AWAY`):
    each 32-bit lane of the result is the even value's upper half, shifted down, beside the
    odd value's upper half, kept where it is."""
    from llvmlite import ir

    half = WIDE // 2
    i32w, i32h = ir.VectorType(ir.IntType(32), WIDE), ir.VectorType(ir.IntType(32), half)

    def splat(t, x):
        return ir.Constant(t, [x] * t.count)

    if away:
        t = builder.add(builder.bitcast(value, i32w), splat(i32w, 0x8000))
        kept = splat(i32h, 0xFFFF0000)
    else:   # Veltkamp's split: the float32 nearest-even to 8 bits, its low half zero
        t = builder.bitcast(veltkamp_bf16(builder, value), i32w)
        kept = None
    take = ir.Constant(ir.VectorType(ir.IntType(32), half), list(range(half)))
    rest = ir.Constant(ir.VectorType(ir.IntType(32), half), list(range(half, WIDE)))
    even, odd_ = (builder.shuffle_vector(t, t, m) for m in (take, rest))
    both = builder.or_(builder.lshr(even, splat(i32h, 16)), odd_ if kept is None else builder.and_(odd_, kept))
    return builder.bitcast(both, ir.VectorType(ir.IntType(16), WIDE))


#: Veltkamp's splitting constant for bfloat16: 2^16 + 1 (float32's 24 bits, 8 kept).
SPLIT = float(2**16 + 1)
#: Magnitudes `veltkamp_bf16` rounds to even bit for bit: normal float32 under 2^111 (past it
#: v (2^16 + 1) overflows; a subnormal may land an ulp off), and zero.
SPLIT_RANGE = (2.0**-126, 2.0**111)


def veltkamp_bf16(builder, value):
    """<n x float> -> the same values rounded to bfloat16's 8 significant bits, to nearest even,
    as float32 (low 16 bits zero): s = v (2^16 + 1), v' = s - (s - v), three IEEE operations with
    no fast-math flags (contracted or reassociated it would be v itself). In SPLIT_RANGE this is
    the to-even rounding bit for bit (every such float32 checked once; tests/test_rotary_block_rows.py
    checks the compiled kernel); a multiply and two subtracts per 8 values on the floating-point
    pipes, where the integer form takes a shift, an AND and two adds."""
    from llvmlite import ir

    s = builder.fmul(value, ir.Constant(value.type, [SPLIT] * value.type.count))
    return builder.fsub(s, builder.fsub(s, value))


def _away_bf16_bits(builder, value):
    """<n x float> -> <n x i16> bfloat16 bits rounded to nearest, ties away from zero (`AWAY`):
    add half of the last kept bit's weight to the magnitude's bits, keep the upper half."""
    from llvmlite import ir

    i32 = ir.VectorType(ir.IntType(32), value.type.count)
    t = builder.add(builder.bitcast(value, i32), ir.Constant(i32, [0x8000] * value.type.count))
    return builder.trunc(builder.lshr(t, ir.Constant(i32, [16] * value.type.count)),
                         ir.VectorType(ir.IntType(16), value.type.count))


def _cache_steps(builder, dtype: str, interleaved: bool, lanes: int, start, count, n, outs, coarse, fine,
                 rounding):
    """`count` steps of `lanes` frequencies from `start`: cos and sin, rounded (`rounding`:
    impls/_numba_half.vector_bits), four copies, in each row; `outs`: (cos, sin) pointers of each
    row, `coarse`: (a, b), `fine`: (x, y) of each row (pointers to the rows' first elements)."""
    from numba.core import cgutils

    with cgutils.for_range(builder, count) as loop:
        f = builder.add(start, builder.mul(loop.index, n.type(lanes)))
        cache_step(builder, dtype, interleaved, lanes, f, n, outs, coarse, fine, rounding)


def cache_step(builder, dtype: str, interleaved: bool, lanes: int, f, n, outs, coarse, fine, rounding,
               away: bool = False):
    """One step of `lanes` frequencies from `f` (an IR integer, a constant where the caller
    unrolls) of every row in `outs`, as `_cache_steps` describes: a and b loaded once for all.
    `away`: bfloat16 rounded to nearest with ties away from zero (`AWAY`)."""
    from llvmlite import ir

    f32v = ir.VectorType(ir.FloatType(), lanes)
    pairs = ir.Constant(ir.VectorType(ir.IntType(32), 2 * lanes), [k // 2 for k in range(2 * lanes)])

    def load(ptr, at):
        return builder.load(builder.bitcast(builder.gep(ptr, [at]), f32v.as_pointer()), align=4)

    def put(ptr, at, bits):
        if interleaved:   # each lane twice: columns 2f, 2f + 1
            bits = builder.shuffle_vector(bits, bits, pairs)
            at = builder.shl(at, at.type(1))
        builder.store(bits, builder.bitcast(builder.gep(ptr, [at]), bits.type.as_pointer()),
                      align=4 if dtype == "float32" else 2)

    va, vb = (load(p, f) for p in coarse)
    for (outc, outs_), (px, py) in zip(outs, fine):
        vx, vy = load(px, f), load(py, f)
        fm = {"flags": CONTRACT}
        c = builder.fsub(builder.fmul(va, vx, **fm), builder.fmul(vb, vy, **fm), **fm)
        s = builder.fadd(builder.fmul(vb, vx, **fm), builder.fmul(va, vy, **fm), **fm)
        # finite: products of finite table values of magnitude <= 1 are never NaN
        if dtype == "float32":
            cb, sb = c, s
        elif lanes == WIDE and dtype in PAIRED:
            cb, sb = (_paired_bf16_bits(builder, v, away) for v in (c, s))
        elif away and dtype == "bfloat16":
            cb, sb = (_away_bf16_bits(builder, v) for v in (c, s))
        else:
            cb, sb = (rounding(builder, v, dtype, finite=True) for v in (c, s))
        if interleaved:
            put(outc, f, cb)
            put(outs_, f, sb)
        else:
            second = builder.add(f, n)
            for ptr, bits in ((outc, cb), (outs_, sb)):
                put(ptr, f, bits)
                put(ptr, second, bits)


def _cache_row_body(builder, dtype: str, interleaved: bool, n, outs, coarse, fine, rounding):
    """WIDE steps, then one LANES step if that many are left; returns the lanes done."""
    wide = builder.sdiv(n, n.type(WIDE))
    _cache_steps(builder, dtype, interleaved, WIDE, n.type(0), wide, n, outs, coarse, fine, rounding)
    start = builder.mul(wide, n.type(WIDE))
    narrow = builder.sdiv(builder.sub(n, start), n.type(LANES))
    _cache_steps(builder, dtype, interleaved, LANES, start, narrow, n, outs, coarse, fine, rounding)
    return builder.add(start, builder.mul(narrow, n.type(LANES)))


def _row_pointer(context, builder, array, aryty, row):
    """A pointer to row `row` of a 2-D C-order array (its own row stride, in elements)."""
    from numba.core import cgutils

    stride = cgutils.unpack_tuple(builder, array.strides)[0]
    size = row.type(aryty.dtype.bitwidth // 8)
    return builder.gep(array.data, [builder.mul(builder.sdiv(stride, size), row)])


@functools.cache
def cache_row(dtype: str, interleaved: bool, rows: int = 1):
    """The intrinsic writing `rows` consecutive cache rows of `dtype` (float32, or a half dtype
    into uint16 bits) in one layout, which share one coarse table row (a, b): WIDE lanes a step,
    then one step of LANES if that many are left. With rows > 1, oc, os, x, y are 2-D (`rows`
    rows each, C order) and each step loads a, b once for all of them. A PAIRED dtype's
    tables are in `wide_order`."""
    from numba.core import types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # captured: its file's stamp keys the on-disk cache
    body = _cache_row_body

    @intrinsic
    def row(typingctx, oc, os, a, b, x, y):
        def codegen(context, builder, signature, args):
            arrays = [context.make_array(t)(context, builder, v) for t, v in zip(signature.args, args)]
            n = arrays[2].nitems

            def at(k, index):
                if not k:
                    return arrays[index].data
                return _row_pointer(context, builder, arrays[index], signature.args[index], n.type(k))

            outs_ = [(at(k, 0), at(k, 1)) for k in range(rows)]
            fine = [(at(k, 4), at(k, 5)) for k in range(rows)]
            return body(builder, dtype, interleaved, n, outs_, (arrays[2].data, arrays[3].data), fine, vector_bits)

        return types.intp(oc, os, a, b, x, y), codegen

    return row


@functools.cache
def cache_rows_at(dtype: str, interleaved: bool, rows: int = 1):
    """`cache_row` addressed by row numbers, `(oc, os, j, cc, sc, q, cf, sf, r) -> lanes done`:
    rows j.. of the 2-D outputs from coarse row q and fine rows r.. of the 2-D tables. Why: a
    kernel that slices a row view per call has Numba count references on each view (an NRT
    call a view) when the slice is named or the loop is not inlined, which measured as much
    as the row itself; this takes the whole arrays and finds the rows' addresses itself."""
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # captured: its file's stamp keys the on-disk cache
    body = _cache_row_body

    @intrinsic
    def rows_at(typingctx, oc, os, j, cc, sc, q, cf, sf, r):
        def codegen(context, builder, signature, args):
            t = signature.args
            ary = {k: context.make_array(t[k])(context, builder, args[k]) for k in (0, 1, 3, 4, 6, 7)}
            j_, q_, r_ = (context.cast(builder, args[k], t[k], types.intp) for k in (2, 5, 8))
            n = cgutils.unpack_tuple(builder, ary[3].shape)[1]

            def at(k, row):
                return _row_pointer(context, builder, ary[k], t[k], row)

            outs_ = [(at(0, builder.add(j_, j_.type(k))), at(1, builder.add(j_, j_.type(k)))) for k in range(rows)]
            fine = [(at(6, builder.add(r_, r_.type(k))), at(7, builder.add(r_, r_.type(k)))) for k in range(rows)]
            return body(builder, dtype, interleaved, n, outs_, (at(3, q_), at(4, q_)), fine, vector_bits)

        return types.intp(oc, os, j, cc, sc, q, cf, sf, r), codegen

    return rows_at


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


def rotate_vectors(builder, dtype: str, interleaved: bool, px, pc, ps, n, vectors, words=None):
    """The first `vectors` LANES-steps of one row at px rotated where it lies by cos/sin rows at
    pc, ps (float32 pointers): each pair (p, q) of frequency f ("half": columns f and n + f;
    "interleaved": 2f and 2f + 1) becomes (p c - q s, q c + p s) in float32 (`contract`, as the
    kernels' scalar loop), a half dtype widened on load and rounded once on store (`vector_bits`,
    NaN kept). Both of a pair's values are loaded before either is stored: in place is safe.
    bfloat16 (`words`: _bf16_words.word_steps, passed so the caller captures it) goes by 32-bit
    words, whole HALF_STEPs of a "half" row reading cos/sin in `wide_order`; a "half" row's
    last LANES-step, if n % WIDE leaves one, as below, in frequency order."""
    from llvmlite import ir
    from numba.core import cgutils

    from .._numba_half import vector_bits

    f32v, i32 = ir.VectorType(ir.FloatType(), LANES), ir.IntType(32)
    element = ir.FloatType() if dtype == "float32" else ir.IntType(16)
    evens = ir.Constant(ir.VectorType(i32, LANES), [2 * k for k in range(LANES)])
    odds = ir.Constant(ir.VectorType(i32, LANES), [2 * k + 1 for k in range(LANES)])
    zipped = ir.Constant(ir.VectorType(i32, 2 * LANES), [k // 2 + (k % 2) * LANES for k in range(2 * LANES)])
    align = 4 if dtype == "float32" else 2

    def vector_at(ptr, at, lanes, kind):
        return builder.bitcast(builder.gep(ptr, [at]), ir.VectorType(kind, lanes).as_pointer())

    def value(bits):
        return bits if dtype == "float32" else _half_value(builder, bits, dtype)

    def bits(v):
        return v if dtype == "float32" else vector_bits(builder, v, dtype)

    start = n.type(0)
    if dtype == "bfloat16":
        per = LANES if interleaved else WIDE
        start = words(builder, interleaved, px, pc, ps, n, builder.sdiv(n, n.type(per)))
        vectors = builder.sub(vectors, builder.sdiv(start, n.type(LANES)))
    with cgutils.for_range(builder, vectors) as loop:
        f = builder.add(start, builder.mul(loop.index, n.type(LANES)))
        vc = builder.load(vector_at(pc, f, LANES, ir.FloatType()), align=4)
        vs = builder.load(vector_at(ps, f, LANES, ir.FloatType()), align=4)
        if interleaved:
            at = vector_at(px, builder.shl(f, f.type(1)), 2 * LANES, element)
            both = builder.load(at, align=align)
            pb, qb = (builder.shuffle_vector(both, both, m) for m in (evens, odds))
        else:
            first = vector_at(px, f, LANES, element)
            second = vector_at(px, builder.add(f, n), LANES, element)
            pb, qb = builder.load(first, align=align), builder.load(second, align=align)
        p, q = value(pb), value(qb)
        fm = {"flags": CONTRACT}
        new_p = builder.fsub(builder.fmul(p, vc, **fm), builder.fmul(q, vs, **fm), **fm)
        new_q = builder.fadd(builder.fmul(q, vc, **fm), builder.fmul(p, vs, **fm), **fm)
        pb, qb = bits(new_p), bits(new_q)
        if interleaved:
            builder.store(builder.shuffle_vector(pb, qb, zipped), at, align=align)
        else:
            builder.store(pb, first, align=align)
            builder.store(qb, second, align=align)


@functools.cache
def rotation_row(dtype: str, interleaved: bool):
    """The intrinsic `(x, c, s) -> lanes done` rotating one head's row of a half dtype where it
    lies (`rotate_vectors`), as the apply kernels' scalar loop does; n = c.size, and
    frequencies from `lanes done` on are left to the caller."""
    from numba.core import types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # noqa: F401  captured: its file's stamp keys the on-disk cache
    from ._bf16_words import word_steps
    rotate, words = rotate_vectors, word_steps   # captured: their files' stamps key the on-disk cache

    @intrinsic
    def row(typingctx, x, c, s):
        def codegen(context, builder, signature, args):
            arrays = [context.make_array(t)(context, builder, v) for t, v in zip(signature.args, args)]
            px, pc, ps = (arr.data for arr in arrays)
            n = arrays[1].nitems
            vectors = builder.sdiv(n, n.type(LANES))
            rotate(builder, dtype, interleaved, px, pc, ps, n, vectors, words)
            return builder.mul(vectors, n.type(LANES))

        return types.intp(x, c, s), codegen

    return row


@functools.cache
def rotation_rows(dtype: str, interleaved: bool):
    """The intrinsic `(x, start, stride, count, c, s, c0, cstep) -> rotated` rotating `count` rows of the
    flat array x where they lie (row k at element start + k stride) by rows c0 + k cstep of the
    2-D cos/sin tables c, s (n = their width, a multiple of LANES: the caller checks), float32
    or a half dtype's bits (`rotate_vectors`). Why: one call per run of rows (a head's block,
    or a position's heads) instead of one per row, which cost a view and LLVM's runtime alias
    checks per row in the float32 loop. float64 tables: False, nothing done (the caller's loop)."""
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from .._numba_half import vector_bits   # noqa: F401  captured: its file's stamp keys the on-disk cache
    from ._bf16_words import word_steps
    rotate, words = rotate_vectors, word_steps   # captured: their files' stamps key the on-disk cache

    @intrinsic
    def rows(typingctx, x, start, stride, count, c, s, c0, cstep):
        sig = types.boolean(x, start, stride, count, c, s, c0, cstep)
        if c.dtype != types.float32:   # float64 (the float32 codec's other dtype): the caller's loop
            return sig, lambda context, builder, signature, args: context.get_constant(types.boolean, False)

        def codegen(context, builder, signature, args):
            t = signature.args
            xa, ca, sa = (context.make_array(t[k])(context, builder, args[k]) for k in (0, 4, 5))
            start_, stride_, count_, c0_, cstep_ = (context.cast(builder, args[k], t[k], types.intp)
                                                    for k in (1, 2, 3, 6, 7))
            n = cgutils.unpack_tuple(builder, ca.shape)[1]
            vectors = builder.sdiv(n, n.type(LANES))
            with cgutils.for_range(builder, count_) as loop:
                k = loop.index
                px = builder.gep(xa.data, [builder.add(start_, builder.mul(k, stride_))])
                row = builder.mul(builder.add(c0_, builder.mul(k, cstep_)), n)
                rotate(builder, dtype, interleaved, px, builder.gep(ca.data, [row]),
                       builder.gep(sa.data, [row]), n, vectors, words)
            return context.get_constant(types.boolean, True)

        return sig, codegen

    return rows
