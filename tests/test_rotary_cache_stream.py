"""The rotary cache's float32 vector rows and its streamed writes (impls/rotary/_kernels.py).

A float32 cache is written by the same vector IR rows as the half dtypes (_vector_rows.py): each
value must be the scalar loop's `a x - b y` / `b x + a y` with the same FMA contraction, bit for
bit. A cache past STREAM_FROM_BYTES is computed a few rows at a time into a scratch and copied
out by streaming stores: the bits must not depend on that, at any length (a last scratch block
partly full, a last BLOCK partly full), position order or layout.
"""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from harness import implementations  # noqa: E402
from harness.core.kinds.rotary import RotarySpec  # noqa: E402

implementations()   # loads the built-ins under harness.impls
from harness.impls.rotary.numba import STREAM_ALIGN, Rotary, streamed_rows  # noqa: E402
from harness.util.memory import aligned, aligned_owner  # noqa: E402

NEVER = 1 << 62


@numba.njit(fastmath={"contract"})
def _scalar_rows(index, step, cc, sc, cf, sf, interleaved, out_c, out_s):
    """The cache as the scalar loop writes it (the float64 kernel's loop, in float32)."""
    n = cc.shape[1]
    for i in range(index.size):
        q, r = index[i] // step, index[i] % step
        for f in range(n):
            c = cc[q, f] * cf[r, f] - sc[q, f] * sf[r, f]
            s = sc[q, f] * cf[r, f] + cc[q, f] * sf[r, f]
            first, second = (2 * f, 2 * f + 1) if interleaved else (f, n + f)
            out_c[i, first], out_c[i, second], out_s[i, first], out_s[i, second] = c, c, s, s


def _cache(spec: RotarySpec, index: np.ndarray, stream_from: int) -> tuple[np.ndarray, np.ndarray]:
    rotary = Rotary(spec)
    rotary.stream_from = stream_from
    return tuple(np.array(part) for part in rotary.cache(index))


def _indices(length: int) -> list[np.ndarray]:
    """Every position in order, and positions out of order with repeats and neighbours."""
    rng = np.random.default_rng(3)
    return [np.arange(length, dtype=np.int64), rng.integers(0, length, length + 5).astype(np.int64)]


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rot", [128, 42])
def test_float32_cache_is_the_scalar_loop_bit_for_bit(layout, rot):
    """rot 42: 21 frequencies, 5 of them past the last vector, left to the scalar tail."""
    spec = RotarySpec(300, rot, offset=70_000, layout=layout)
    step, cc, sc, cf, sf = Rotary(spec).cache_tables
    for index in _indices(spec.length):
        want = np.empty((index.size, rot), np.float32), np.empty((index.size, rot), np.float32)
        _scalar_rows(index, step, cc, sc, cf, sf, layout == "interleaved", *want)
        for stream_from in (NEVER, 0):
            for got, expected in zip(_cache(spec, index, stream_from), want):
                np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_streamed_cache_is_the_cached_one_bit_for_bit(dtype, layout):
    """1000 rows: not a whole number of scratch blocks or of BLOCKs; rot 80: 16 + 16 + 8 lanes."""
    for rot in (128, 80):
        spec = RotarySpec(1000, rot, offset=3, layout=layout, dtype=dtype)
        for index in _indices(spec.length):
            probe = Rotary(spec).empty((index.size, rot), 0)
            assert streamed_rows(probe, probe, 0) > 0   # the streamed path is the one tested
            cached, streamed = _cache(spec, index, NEVER), _cache(spec, index, 0)
            for a, b in zip(cached, streamed):
                np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_streamed_rows_only_for_large_aligned_vector_caches():
    def array(dtype, rows=64, cols=128, skew=0):
        owner = aligned_owner((rows * cols + 16,), dtype, STREAM_ALIGN)
        flat = aligned(owner, (rows * cols + 16,), dtype, STREAM_ALIGN)
        return flat[skew:skew + rows * cols].reshape(rows, cols)

    ok = array(np.float32)
    assert streamed_rows(ok, ok, 0) > 0 and streamed_rows(ok, ok, 0) % 2 == 0
    assert streamed_rows(ok, ok, 2 * ok.nbytes + 1) == 0          # under the threshold
    assert streamed_rows(*(array(np.float64),) * 2, 0) == 0        # float64 keeps its loops
    skewed = array(np.float32, skew=1)                             # 4 bytes past a boundary
    assert streamed_rows(skewed, skewed, 0) == 0
