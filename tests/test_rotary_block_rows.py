"""The rotary cache of consecutive positions a coarse step at a time (impls/rotary/_block_rows.py).

It must be the row loop's cache bit for bit (_kernels.py, itself the scalar loop's: see
test_rotary_cache_stream.py) at any length (partial coarse steps, an odd row left after the
pairs, partial BLOCKs and scratch blocks), streamed or not, in both layouts and at any n_freq
it takes (16-lane steps, then one 8-lane step); bfloat16 must round to nearest even over every
magnitude a cache holds; and the ties-away bfloat16 rounding must differ from ties-to-even only
on ties, by one ulp, away from zero.
"""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from harness import implementations  # noqa: E402
from harness.core.kinds.rotary import RotarySpec  # noqa: E402

implementations()   # loads the built-ins under harness.impls
from harness.impls.rotary._block_rows import block_kernels, cache_block, supported  # noqa: E402
from harness.impls.rotary._vector_rows import SPLIT_RANGE, wide_order  # noqa: E402
from harness.impls.rotary.numba import Rotary  # noqa: E402

NEVER = 1 << 62


def _both(spec: RotarySpec, stream_from: int, away: bool = False):
    """(the row loop's cache over arange, the block kernel's), as uint16/uint32 bits."""
    rotary = Rotary(spec)
    rotary.stream_from = stream_from
    old = rotary.cache(np.arange(spec.length, dtype=np.int64))
    new = rotary.cache_range(away=away)
    bits = np.uint32 if spec.dtype == "float32" else np.uint16
    return [np.array(x).view(bits) for x in old], [np.array(x).view(bits) for x in new]


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("length,rot", [(1000, 128), (37, 80), (1, 16), (531, 48)])
def test_block_cache_is_the_row_loop_bit_for_bit(dtype, layout, length, rot):
    """1000 rows: partial BLOCK and scratch block; 37: two coarse steps and an odd row; rot 80:
    16 + 16 + 8 lanes; rot 16: one 8-lane step and nothing else; offset 70 000: large angles."""
    spec = RotarySpec(length, rot, offset=70_000, layout=layout, dtype=dtype)
    for stream_from in (NEVER, 0):
        old, new = _both(spec, stream_from)
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("threads", [1, 2])
def test_block_cache_threads_write_every_row(threads):
    """Two threads split the rows in BLOCK runs: every row written once, as one thread's."""
    spec = RotarySpec(3 * 256 + 5, 64, dtype="bfloat16")
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        old, new = _both(spec, NEVER)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(old, new):
        np.testing.assert_array_equal(a, b)


def _ties(bits_even: np.ndarray, bits_away: np.ndarray, exact: np.ndarray) -> None:
    """bits_away is bits_even except where the float32 value was a tie, where it is the
    neighbour away from zero."""
    u = exact.view(np.uint32)
    tie = (u & 0xFFFF) == 0x8000
    np.testing.assert_array_equal(bits_away[~tie], bits_even[~tie])
    np.testing.assert_array_equal(bits_away[tie], ((u[tie] + 0x8000) >> 16).astype(np.uint16))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_away_rounds_ties_away_and_everything_else_as_even(layout):
    """The float32 cache's values rounded by both rules, and a row of made ties through the
    intrinsic itself (a cache rarely holds a tie: 1 value in 65536)."""
    spec = RotarySpec(1000, 80, offset=11, layout=layout, dtype="bfloat16")
    _, even = _both(spec, NEVER)
    _, away = _both(spec, NEVER, away=True)
    f32 = Rotary(RotarySpec(1000, 80, offset=11, layout=layout, dtype="float32")).cache_range()
    for e, a, x in zip(even, away, f32):
        _ties(e, a, np.ascontiguousarray(x))

    n = 40   # 16 + 16 + 8 lanes; a = 1, b = 0: cos = x, sin = y, exactly
    rng = np.random.default_rng(5)
    x = (rng.integers(0x3F000000 >> 16, 0x3F800000 >> 16, n).astype(np.uint32) << 16) | 0x8000
    y = x | 0x80000000
    x[::3] = rng.integers(0x3F000000, 0x3F800000, n)[::3].astype(np.uint32)   # not ties
    order = wide_order(n)   # the column order a bfloat16 cache's tables are kept in
    fine = [t[order].view(np.float32).reshape(1, n) for t in (x, y)]
    coarse = [np.ones((1, n), np.float32), np.zeros((1, n), np.float32)]
    block = cache_block("bfloat16", layout == "interleaved", n, True)

    @numba.njit
    def one_row(oc, os, cc, sc, cf, sf):
        block(oc, os, 0, cc, sc, 0, cf, sf, 0, 1)

    out = [np.zeros((1, 2 * n), np.uint16) for _ in range(2)]
    one_row(*out, *coarse, *fine)
    for got, want in zip(out, (x, y)):
        first = got[0, 0::2] if layout == "interleaved" else got[0, :n]
        np.testing.assert_array_equal(first, ((want + 0x8000) >> 16).astype(np.uint16))


def _rne(u: np.ndarray) -> np.ndarray:
    """float32 bits -> bfloat16 bits, to nearest even (NumPy, in integers: torch's rule)."""
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_bfloat16_rounds_to_nearest_even_across_its_range(layout):
    """The kernel's rounding (Veltkamp's split in the 16-lane steps, the integer form in the 8-lane
    one) is to nearest even for every magnitude a cache can hold: random bits of every exponent
    of SPLIT_RANGE, exact ties and their neighbours, zeros; a = 1, b = 0 makes cos = x, sin = y."""
    n, rows = 40, 2048   # 16 + 16 + 8 lanes
    rng = np.random.default_rng(11)
    lo, hi = (int(np.float32(v).view(np.uint32)) for v in SPLIT_RANGE)
    u = rng.integers(lo, hi, (rows, 2 * n), dtype=np.uint64).astype(np.uint32)
    u[::4] = (u[::4] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)        # ties: to the even neighbour
    u[1::4] = (u[1::4] & np.uint32(0xFFFF0000)) + np.uint32(0x7FFF)      # just under a tie: down
    u[2::8] = (u[2::8] & np.uint32(0xFFFF0000)) + np.uint32(0x8001)      # just over: up
    u |= (rng.integers(0, 2, u.shape, dtype=np.uint64).astype(np.uint32) << np.uint32(31))   # signs
    u[3::16, :4] = 0   # +0 (-0 reads +0 out of the rotation's a x - b y: no rounding there)
    x, y = np.ascontiguousarray(u[:, :n]), np.ascontiguousarray(u[:, n:])
    order = wide_order(n)   # the column order a bfloat16 cache's tables are kept in
    fine = [t[:, order].view(np.float32).copy() for t in (x, y)]
    coarse = [np.ones((1, n), np.float32), np.zeros((1, n), np.float32)]
    block = cache_block("bfloat16", layout == "interleaved", n)

    @numba.njit
    def write(oc, os, cc, sc, cf, sf):
        block(oc, os, 0, cc, sc, 0, cf, sf, 0, cf.shape[0])

    out = [np.zeros((rows, 2 * n), np.uint16) for _ in range(2)]
    write(*out, *coarse, *fine)
    for got, want in zip(out, (x, y)):
        for first in ((slice(None), slice(0, None, 2)), (slice(None), slice(1, None, 2))) \
                if layout == "interleaved" else ((slice(None), slice(0, n)), (slice(None), slice(n, None))):
            np.testing.assert_array_equal(got[first], _rne(want))


def test_bfloat16_cache_refuses_a_scale_past_the_split_range():
    spec = RotarySpec(64, 32, dtype="bfloat16", rope_type="yarn", factor=4.0,
                      original_max_position_embeddings=32, attention_factor=2.0**111)
    with pytest.raises(ValueError, match="attention_scaling must be below"):
        Rotary(spec).cache_range()


def test_only_whole_vectors_of_frequencies():
    assert supported(8) and supported(64) and not supported(0) and not supported(21)
    with pytest.raises(ValueError, match="n_freq"):
        block_kernels("float32", False, 21)
