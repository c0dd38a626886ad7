"""bfloat16 rotation steps on 32-bit words: two values a lane, no widening shuffles (registers nothing).

Why: rotating bfloat16 where it lies as 8-lane float32 vectors widened each 16-bit value
(`vpmovzxwd` and a shift), rounded each result by 10 integer operations (the to-even add, a
NaN select) and narrowed 8 lanes of 32 bits back to 16 (a pack and a lane permute): about 56
vector operations per 16 pairs against float16's 12 (`vcvtps2ph`, `vcvtph2ps`), so the apply
was compute-bound at twice its read-modify-write roof at two threads, where float16's was at it.

Here 16 bfloat16 values are loaded as 8 words of 32 bits. A word's upper half is already the
float32 of its odd value once the lower half is masked off (`and`), its lower half the even
value's once shifted up (`shl`): two operations widen 16 values. Each result rounds to nearest
even by the integer rule (u + 0x7FFF + the lowest kept bit: a shift, an and, two adds), and
the even result's upper half shifted down beside the odd result's upper half is the output
word (a shift, an and, an or; LLVM makes the last two a word blend): about 26 integer and 8
floating-point operations per 16 pairs.

No NaN select: every NaN here is a float32 result of arithmetic on bfloat16 values and finite
cos/sin, so its lower 16 bits are zero (x86 propagates an operand's payload, quieted, or makes
the default NaN 0xFFC00000); the rounding add then carries nothing into the upper half, which
is NaN, quiet, as `vector_bits`' select would make it: the same bits.

Pairs in a word: "interleaved" (GPT-J: 2f, 2f + 1) holds a pair in each word, so the even
value is p and the odd one q, cos/sin in frequency order; "half" (NeoX: f and n + f) holds
frequencies f, f + 1 in each word of either half, so a step of WIDE frequencies reads its
cos/sin rows in `wide_order` (even frequencies in lanes 0-7, odd in 8-15), which the caller
keeps its tables in (`numba.Rotary`).
"""

from __future__ import annotations

#: 32-bit words a step: one AVX2 register of 16 bfloat16 values.
WORDS = 8
#: Frequencies a "half" step covers (each half: 16 values in WORDS words).
HALF_STEP = 2 * WORDS


def _rounded(builder, value):
    """<WORDS x float> -> <WORDS x i32>: the bits plus 0x7FFF plus the lowest kept bit (the
    upper half is then the value rounded to nearest even: `vector_bits`' rule)."""
    from llvmlite import ir

    i32 = ir.VectorType(ir.IntType(32), WORDS)
    u = builder.bitcast(value, i32)
    odd = builder.and_(builder.lshr(u, _splat(i32, 16)), _splat(i32, 1))
    return builder.add(builder.add(u, _splat(i32, 0x7FFF)), odd)


def _splat(vector_type, x):
    from llvmlite import ir

    return ir.Constant(vector_type, [x] * vector_type.count)


def _word(builder, low, high):
    """The output word of two float32 results: `low` rounded into the lower half, `high` into
    the upper."""
    from llvmlite import ir

    i32 = ir.VectorType(ir.IntType(32), WORDS)
    return builder.or_(builder.lshr(_rounded(builder, low), _splat(i32, 16)),
                       builder.and_(_rounded(builder, high), _splat(i32, 0xFFFF0000)))


def _values(builder, words):
    """<WORDS x i32> words -> (even values, odd values) as <WORDS x float>: exact."""
    from llvmlite import ir

    i32 = ir.VectorType(ir.IntType(32), WORDS)
    f32 = ir.VectorType(ir.FloatType(), WORDS)
    return (builder.bitcast(builder.shl(words, _splat(i32, 16)), f32),
            builder.bitcast(builder.and_(words, _splat(i32, 0xFFFF0000)), f32))


def _turn(builder, p, q, c, s):
    """(p c - q s, q c + p s) as rotate_vectors forms them (`contract` only)."""
    from ._vector_rows import CONTRACT

    fm = {"flags": CONTRACT}
    return (builder.fsub(builder.fmul(p, c, **fm), builder.fmul(q, s, **fm), **fm),
            builder.fadd(builder.fmul(q, c, **fm), builder.fmul(p, s, **fm), **fm))


def word_steps(builder, interleaved: bool, px, pc, ps, n, steps):
    """`steps` steps from frequency 0 of one bfloat16 row at px (i16 pointer) rotated where it
    lies by float32 cos/sin rows at pc, ps: "interleaved", WORDS frequencies a step, cos/sin in
    frequency order; "half", HALF_STEP frequencies a step, cos/sin in `wide_order`. Returns the
    frequencies done (an IR integer)."""
    from llvmlite import ir
    from numba.core import cgutils

    i32, f32 = ir.VectorType(ir.IntType(32), WORDS), ir.VectorType(ir.FloatType(), WORDS)
    per = WORDS if interleaved else HALF_STEP

    def at(ptr, index, kind):
        return builder.bitcast(builder.gep(ptr, [index]), kind.as_pointer())

    def floats(ptr, index):
        return builder.load(at(ptr, index, f32), align=4)

    with cgutils.for_range(builder, steps) as loop:
        f = builder.mul(loop.index, n.type(per))
        if interleaved:   # word k: p (even) and q (odd) of frequency f + k
            where = at(px, builder.shl(f, f.type(1)), i32)
            p, q = _values(builder, builder.load(where, align=2))
            new_p, new_q = _turn(builder, p, q, floats(pc, f), floats(ps, f))
            builder.store(_word(builder, new_p, new_q), where, align=2)
        else:             # word k of each half: frequencies f + 2k (lower), f + 2k + 1 (upper)
            first, second = at(px, f, i32), at(px, builder.add(f, n), i32)
            (p_even, p_odd), (q_even, q_odd) = (_values(builder, builder.load(w, align=2))
                                                for w in (first, second))
            odd_at = builder.add(f, f.type(WORDS))
            c_even, c_odd, s_even, s_odd = (floats(pc, f), floats(pc, odd_at), floats(ps, f),
                                            floats(ps, odd_at))
            even_p, even_q = _turn(builder, p_even, q_even, c_even, s_even)
            odd_p, odd_q = _turn(builder, p_odd, q_odd, c_odd, s_odd)
            builder.store(_word(builder, even_p, odd_p), first, align=2)
            builder.store(_word(builder, even_q, odd_q), second, align=2)
    return builder.mul(steps, n.type(per))
