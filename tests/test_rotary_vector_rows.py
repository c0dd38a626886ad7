"""The half-precision cache rows written as vector IR (impls/rotary/_vector_rows.py).

Each lane must round exactly as the scalar codecs of impls/_numba_half.py (checked there against
NumPy and torch), land in both of its columns in either layout, and leave the n_freq % 8 tail to
the caller; the whole cache must be the float32 kernel's values rounded once, and a rotation the
apply kernels' scalar loop bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")
torch = pytest.importorskip("torch")

from harness import implementations, to_numpy  # noqa: E402
from harness.core.kinds.rotary import RotarySpec  # noqa: E402

implementations()   # loads the built-ins under harness.impls
from harness.impls._numba_half import codecs  # noqa: E402
from harness.impls.rotary._vector_rows import (LANES, PAIRED, SPLIT_RANGE, WIDE, cache_row,  # noqa: E402
                                              rotation_row, rotation_rows, wide_order)
from tests.test_fast_half import _awkward_float32, kernels  # noqa: E402,F401 (kernels: a fixture)

HALF = ("float16", "bfloat16")


def _awkward() -> np.ndarray:
    """test_fast_half's awkward float32 values (ties, subnormals, overflow, infinities) padded to
    whole vectors, without its NaNs: a cache row's values are products of finite tables, and
    its rounding leaves out the NaN check (`vector_bits(finite=True)`)."""
    every = _awkward_float32()
    every = every[~np.isnan(every)]
    return np.concatenate([every, np.zeros(-every.size % LANES, np.float32)])


def _nan_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Which 16-bit patterns are NaNs of `dtype`."""
    exponent, mantissa = (0x7C00, 0x03FF) if dtype == "float16" else (0x7F80, 0x007F)
    return ((bits & exponent) == exponent) & ((bits & mantissa) != 0)


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", HALF)
def test_each_lane_rounds_as_the_scalar_codec_into_both_columns(dtype, interleaved, kernels):
    """bfloat16's 16-lane steps round by Veltkamp's split: its awkward values are those of its
    range (SPLIT_RANGE: no subnormals, infinities or overflow; a cache value is at most
    attention_scaling, which numba.py bounds)."""
    a = _awkward()
    if dtype in PAIRED:
        m = np.abs(a)
        a = a[(m == 0) | ((m >= SPLIT_RANGE[0]) & (m < SPLIT_RANGE[1]))]
        a = np.concatenate([a, np.zeros(-a.size % LANES, np.float32)])
    n = a.size
    b, x, y = np.zeros(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    row = cache_row(dtype, interleaved)

    @numba.njit
    def write(oc, os, a, b, x, y):
        return row(oc, os, a, b, x, y)

    oc, os = np.zeros(2 * n, np.uint16), np.zeros(2 * n, np.uint16)
    order = wide_order(n) if dtype in PAIRED else np.arange(n)   # the tables' column order
    assert write(oc, os, a[order], b, x, y) == n
    want_c, want_s = np.empty(n, np.uint16), np.empty(n, np.uint16)
    stores = kernels[0]   # test_fast_half's scalar store loop
    stores(want_c, a * x - b * y, codecs()[dtype].store)   # exact products: the same float32
    stores(want_s, b * x + a * y, codecs()[dtype].store)
    first, second = ((slice(0, None, 2), slice(1, None, 2)) if interleaved
                     else (slice(0, n), slice(n, None)))
    for out, want in ((oc, want_c), (os, want_s)):
        np.testing.assert_array_equal(out[first], want)
        np.testing.assert_array_equal(out[second], want)


@pytest.mark.filterwarnings("ignore:invalid value", "ignore:overflow")
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", HALF)
def test_rotation_is_the_scalar_loop_bit_for_bit(dtype, interleaved):
    """In place over awkward half values (NaN, infinities, ties after the multiply-adds) against
    the apply kernels' own scalar loop, same codec and same `contract` fastmath. n_freq 520:
    bfloat16 "half" rows go by 32 whole 16-frequency word steps (cos/sin in `wide_order`),
    then one 8-lane step in frequency order."""
    codec, rng = codecs()[dtype], np.random.default_rng(5)
    n = 520
    x = rng.integers(0, 2**16, 2 * n + 3, dtype=np.uint64).astype(np.uint16)   # 3 dims past rot
    c, s = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2))
    c[::2], s[::2] = 1 + 2.0**-8, 0   # exact products, half an ulp of bfloat16 past 1: ties
    load, store = codec.load, codec.store

    @numba.njit(fastmath={"contract"})
    def scalar(x, cr, sr, interleaved):
        for f in range(cr.size):
            i, j = (2 * f, 2 * f + 1) if interleaved else (f, cr.size + f)
            a, b = load(x[i]), load(x[j])
            x[i] = store(a * cr[f] - b * sr[f])
            x[j] = store(b * cr[f] + a * sr[f])

    row = rotation_row(dtype, interleaved)

    @numba.njit
    def vector(x, cr, sr):
        return row(x, cr, sr)

    want, got = x.copy(), x.copy()
    scalar(want, c, s, interleaved)
    order = wide_order(n) if dtype == "bfloat16" and not interleaved else np.arange(n)
    assert vector(got, c[order], s[order]) == n
    nan = _nan_bits(got, dtype) & _nan_bits(want, dtype)   # which NaN propagates is operand order
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(_nan_bits(got, dtype), _nan_bits(want, dtype))
    assert not np.array_equal(got, x) and np.array_equal(got[2 * n:], x[2 * n:])


@pytest.mark.filterwarnings("ignore:invalid value", "ignore:overflow")
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", ("float32", *HALF))
def test_rotation_rows_rotate_each_row_of_a_run_as_one_row_call(dtype, interleaved):
    """A run of rows (row k at start + k stride, 3 dims past rot each) by cos/sin rows c0 + k
    cstep, as rotation_row on each row: heads first (cstep 1) and a position's heads (cstep 0);
    the dims past rot, and the rows before and after the run, untouched."""
    rng, n, count, stride = np.random.default_rng(7), 24, 5, 2 * 24 + 3
    if dtype == "float32":
        x = rng.standard_normal(stride * (count + 2)).astype(np.float32)
    else:
        x = rng.integers(0, 2**16, stride * (count + 2), dtype=np.uint64).astype(np.uint16)
    c, s = (rng.uniform(-1, 1, (count, n)).astype(np.float32) for _ in range(2))
    row, rows = rotation_row(dtype, interleaved), rotation_rows(dtype, interleaved)

    @numba.njit
    def one_by_one(x, c, s, cstep):
        for k in range(count):
            row(x[(k + 1) * stride:(k + 1) * stride + 2 * n], c[k * cstep], s[k * cstep])

    @numba.njit
    def as_a_run(x, c, s, cstep):
        return rows(x, stride, stride, count, c, s, 0, cstep)

    for cstep in (1, 0):
        want, got = x.copy(), x.copy()
        one_by_one(want, c, s, cstep)
        assert as_a_run(got, c, s, cstep)
        bits = got.view(np.uint32) if dtype == "float32" else got
        np.testing.assert_array_equal(bits, want.view(bits.dtype))
        assert not np.array_equal(got, x)
        untouched = np.ones(x.size, bool)
        for k in range(count):
            untouched[(k + 1) * stride:(k + 1) * stride + 2 * n] = False
        np.testing.assert_array_equal(got[untouched], x[untouched])


def test_rotation_rows_leave_float64_to_the_caller():
    rows = rotation_rows("float32", False)

    @numba.njit
    def call(x, c):
        return rows(x, 0, 16, 1, c, c, 0, 1)

    x = np.ones(16)
    assert not call(x, np.ones((1, 8))) and np.all(x == 1)


def test_wide_order_puts_even_then_odd_frequencies_in_each_whole_step():
    order = wide_order(2 * WIDE + LANES + 3)
    assert sorted(order) == list(range(order.size))
    assert list(order[:WIDE]) == [*range(0, WIDE, 2), *range(1, WIDE, 2)]
    assert list(order[WIDE:2 * WIDE]) == [WIDE + f for f in order[:WIDE]]
    assert list(order[2 * WIDE:]) == list(range(2 * WIDE, order.size))


@pytest.mark.parametrize("n", [2 * LANES + 5, WIDE + LANES + 5, LANES + 3])
def test_a_partial_vector_is_left_to_the_caller(n):
    """Whole WIDE steps, then one LANES step if that many are left, then nothing."""
    ones = np.ones(n, np.float32)
    row = cache_row("float16", False)

    @numba.njit
    def write(oc, os, a, z):
        return row(oc, os, a, z, a, z)   # cos 1, sin 0

    done = n - n % LANES
    oc, os = np.zeros(2 * n, np.uint16), np.zeros(2 * n, np.uint16)
    assert write(oc, os, ones, np.zeros(n, np.float32)) == done
    assert oc[:done].all() and oc[n:n + done].all()
    assert not oc[done:n].any() and not oc[n + done:].any()
    rotate = rotation_row("bfloat16", True)

    @numba.njit
    def turn(x, c):
        return rotate(x, c, c)

    x = np.full(2 * n, 0x3F80, np.uint16)   # bfloat16 ones
    assert turn(x, ones) == done
    assert (x[2 * done:] == 0x3F80).all() and (x[:2 * done] != 0x3F80).any()


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", ["rotary-numba-cache", "rotary-numba-cache-recycled"])
def test_half_cache_is_the_float32_cache_rounded_once(name, dtype, layout):
    """Both layouts, far positions, and rot 42: 21 frequencies, 5 of them past the last vector."""
    spec = RotarySpec(300, 42, offset=70_000, layout=layout, dtype=dtype)
    impl = next(i for i in implementations() if i.name == name)
    half = [to_numpy(t) for t in impl.build(spec)()]
    wide = [np.asarray(t) for t in impl.build(spec.replace(dtype="float32"))()]
    for got, f32 in zip(half, wide):
        want = (f32.astype(np.float16) if dtype == "float16"
                else torch.from_numpy(f32).to(torch.bfloat16).float().numpy())
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
