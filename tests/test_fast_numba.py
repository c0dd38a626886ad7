"""The Numba angle-addition kernels: error bound at long positions, block edges, threads, forward."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, reference
from harness.core.checks import check
from harness.core.convert import to_numpy
from harness.core.kinds.table import forward_input
from harness.core.registry import REGISTRY
from harness.impls import fast_numba  # noqa: F401  (registers)
from harness.impls.fast_numba import ANCHOR, ANCHOR_EXACT, BLOCK, BLOCK_EXACT

numba = pytest.importorskip("numba")

TABLES = ["numba-angleadd", "numba-angleadd-f64", "numba-angleadd-recycled"]
FORWARDS = ["numba-fused-forward", "numba-fused-forward-recycled"]
LONG = Spec(262_144, 8)   # every block-start rotation of a long table, narrow to stay fast


@pytest.fixture
def threads():
    """Set numba's thread count for one test and restore it afterwards."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def _table(name: str, spec: Spec) -> np.ndarray:
    return REGISTRY.get(name).build(spec)()


@pytest.mark.parametrize("name, bound", [("numba-angleadd", 3e-7), ("numba-angleadd-recycled", 3e-7),
                                         ("numba-angleadd-f64", 2.0**-25 * 1.01)])
def test_error_bound_out_to_262144_positions(name, bound):
    """float32 arithmetic stays under the 3e-7 target; float64 arithmetic rounds once (0.5 ulp)."""
    err = np.abs(_table(name, LONG) - reference(LONG)).max()
    assert err <= bound


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("length", [1, 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, BLOCK_EXACT + 1,
                                    ANCHOR * BLOCK + BLOCK + 1, ANCHOR_EXACT * BLOCK_EXACT + 1])   # past an anchor
def test_block_edges_and_thread_counts(name, n_threads, length, threads):
    """Partial last blocks, one-row tables and chunk starts for 1 and 2 threads."""
    threads(n_threads)
    for spec in (Spec(length, 6, offset=2), Spec(length, 7, odd="extend", layout="concat", dtype="float64")):
        result = check(REGISTRY.get(name), spec)
        assert result.status == "pass", (spec.short(), result.reason)


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("extra", [dict(layout="concat", freq_shift=1), dict(cos_first=True),
                                   dict(d_model=33, odd="pad"), dict(offset=1_000_000, scale=2.0)])
def test_conventions(name, extra):
    spec = Spec(**{"length": 200, "d_model": 16, **extra})
    assert check(REGISTRY.get(name), spec).status == "pass"


def test_more_threads_than_blocks(threads):
    """Fewer blocks than threads: every row is still written exactly once."""
    threads(2)
    assert check(REGISTRY.get("numba-angleadd"), Spec(BLOCK // 2, 10)).status == "pass"


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("spec", [Spec(BLOCK + 3, 12), Spec(40, 9, odd="pad", dtype="float64"), Spec(1, 2)],
                         ids=lambda s: s.short())
@pytest.mark.parametrize("name", FORWARDS)
def test_fused_forward(name, spec, n_threads, threads):
    threads(n_threads)
    assert check(REGISTRY.get(name), spec).status == "pass"


@pytest.mark.parametrize("name", FORWARDS)
def test_fused_forward_does_not_touch_x(name):
    spec = Spec(70, 8)
    x = forward_input(spec)
    before = x.copy()
    forward = REGISTRY.get(name).build(spec)
    first = forward(x)
    second = forward(x)   # the first is still held: a recycled output must not be reused
    np.testing.assert_array_equal(x, before)
    assert not np.shares_memory(first, second)
    for out in (first, second):
        np.testing.assert_allclose(out, x + reference(spec), rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", FORWARDS)
def test_fused_forward_reads_x_as_it_is_at_each_call(name, dtype):
    """The same x changed in place between calls: a kernel keyed on its input's identity would
    hand back its first answer; this one reads x itself."""
    spec = Spec(70, 8, dtype=dtype)
    x = forward_input(spec)
    forward = REGISTRY.get(name).build(spec)
    forward(x)
    np.negative(x, out=x)
    got = to_numpy(forward(x)).astype(np.float64)
    want = x.astype(np.float64) + reference(spec)
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(dtype).eps * 2)


def test_recycled_tables_reuse_only_memory_nobody_holds():
    """Each call is a correct table; a held table (or a view of it) is never written over."""
    spec = Spec(100, 16, offset=3)
    table = REGISTRY.get("numba-angleadd-recycled").build(spec)
    first = table()
    kept = first[10:20].copy()
    window = first[10:20]
    del first
    second = table()
    assert not np.shares_memory(second, window)
    np.testing.assert_array_equal(window, kept)
    address = second.ctypes.data
    second.fill(np.nan)
    del second
    third = table()
    assert third.ctypes.data == address   # let go, so its memory comes back, written again
    np.testing.assert_allclose(third, reference(spec), atol=1e-6)


@pytest.mark.parametrize(("dtype", "bound"), [("float16", 2.0 ** -12 + 1e-7), ("bfloat16", 2.0 ** -9 + 1e-7)])
@pytest.mark.parametrize("name", TABLES)
def test_half_precision_tables_are_float32_rounded_once(name, dtype, bound):
    """Half an ulp of the half dtype (values in [0.5, 1) have the coarsest), plus float32's error."""
    spec = Spec(300, 20, dtype=dtype, layout="concat", offset=5)
    out = to_numpy(_table(name, spec)).astype(np.float64)
    assert np.abs(out - reference(spec)).max() <= bound


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", FORWARDS)
def test_half_precision_forwards_pass(name, dtype):
    result = check(REGISTRY.get(name), Spec(70, 12, dtype=dtype))
    assert result.status == "pass", result.reason


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("d", [16, 40, 64])
def test_vector_tile_paths_write_the_same_exact_table(dtype, d, monkeypatch):
    """The vector tile (impls/table/_tile.py) writes a table by streaming stores into aligned
    memory, by cached stores into memory one element off, and ends a width that is not a whole
    number of vectors with an overlapped vector: every path must give the same bits, and those
    within the exact bound."""
    from harness.impls.table import numba_fast
    from harness.impls._numba_half import Storage
    from harness.core.kinds.table.tolerance import exact_tolerance
    from harness.util.memory import aligned, aligned_owner

    monkeypatch.setattr(numba_fast, "STREAM_BYTES", 0)   # stream every table that can be
    spec = Spec(3 * BLOCK + 5, d, offset=7, dtype=dtype)
    storage = Storage(dtype)
    shape, kind = (1, spec.length, d), storage.kernel
    run = numba_fast._sweeper(spec, numba_fast._work(spec))
    streamed = aligned(aligned_owner(shape, kind, 64), shape, kind, 64)
    owner = aligned_owner(shape, kind, 64)
    skip = -owner.ctypes.data % 64 + kind.itemsize     # one element past a 64-byte boundary
    shifted = owner[skip:skip + streamed.nbytes].view(kind).reshape(shape)
    run(streamed)
    run(shifted)
    assert np.array_equal(streamed, shifted)
    got = to_numpy(storage.result()(streamed[0])).astype(np.float64)
    assert np.all(np.abs(got - reference(spec)) <= exact_tolerance(spec))


def test_paired_bfloat16_store_rounds_ties_to_even():
    """The paired store on values whose low 16 bits are the rounding's edges (ties, one either
    side, with bit 16 even and odd): the same bits as the bfloat16 encoding, in column order."""
    from harness.impls._numba_half import Storage
    from harness.impls.table._tile import PAIRED, WIDTH, paired_order, tile

    rows = tile(PAIRED)

    @numba.njit
    def write(out, X, Y, P, Q):
        rows(out, 0, X, Y, 0, X.shape[0], P, Q, False)

    rng = np.random.default_rng(3)
    high = rng.integers(0x0080, 0x7F00, 64, dtype=np.uint32) | np.uint32(0x8000) * rng.integers(0, 2, 64, dtype=np.uint32)
    low = np.array([0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234], np.uint32)
    bits = ((high[:, None] << np.uint32(16)) | low[None, :]).reshape(-1, 2 * WIDTH)
    values = bits.view(np.float32)
    order = paired_order(values.shape[1])
    X = np.ascontiguousarray(values[:, order])
    Y, P, Q = np.zeros_like(X), np.ones(X.shape[1], np.float32), np.zeros(X.shape[1], np.float32)
    out = np.zeros(X.shape, np.uint16)
    write(out, X, Y, P, Q)
    assert np.array_equal(out, Storage("bfloat16").encode(values))


@pytest.mark.parametrize("fields", [{}, {"layout": "concat", "cos_first": True, "freq_shift": 1}])
@pytest.mark.parametrize("d", [16, 64])
def test_paired_bfloat16_rows_are_the_plain_rows_bits(d, fields, monkeypatch):
    """A bfloat16 table's paired store (columns permuted in, put back in order by a word blend,
    impls/table/_tile.py) writes the plain store's bits, streamed and cached, float32 and
    float64 arithmetic; and the registered table takes that path."""
    from harness.impls.table import numba_fast
    from harness.util.memory import aligned_owner

    monkeypatch.setattr(numba_fast, "STREAM_BYTES", 0)
    spec = Spec(3 * BLOCK + 5, d, offset=70001, dtype="bfloat16", **fields)
    shape, plain = (1, spec.length, d), {}
    for arithmetic in (np.float32, np.float64):
        runs = [numba_fast._sweeper(spec, np.dtype(arithmetic), paired=p) for p in (False, True)]
        for skip in (0, 2):   # bytes past a 64-byte boundary: 0 streamed, 2 cached
            owner = aligned_owner(shape, np.uint16, 64)
            start = -owner.ctypes.data % 64 + skip
            out = owner[start:start + 2 * spec.length * d].view(np.uint16).reshape(shape)
            plain[arithmetic] = runs[0](np.zeros(shape, np.uint16))
            assert np.array_equal(runs[1](out), plain[arithmetic])
    table = to_numpy(REGISTRY.get("numba-angleadd").build(spec)())   # bfloat16 values as float32
    assert np.array_equal(table, (plain[np.float32][0].astype(np.uint32) << 16).view(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("d", [8, 40, 64])
def test_forward_vector_row_is_the_scalar_sum_rounded_once(dtype, d, monkeypatch):
    """The forward's vector row (impls/table/_add_row.py), streamed or cached, with the
    overlapped tail (d = 40) and the scalar loop (d = 8), writes round(x + pe) bit for bit as
    the scalar codec does: pe is the float32 (float64) table, x widened exactly, one rounding;
    NaN stays NaN and infinities pass through."""
    import torch

    from harness.impls.table import numba_fast

    monkeypatch.setattr(numba_fast, "STREAM_BYTES", 0)   # stream every output that can be
    spec = Spec(2 * BLOCK + 3, d, offset=5, dtype=dtype)
    work = "float64" if dtype == "float64" else "float32"
    pe = REGISTRY.get("numba-angleadd").build(Spec(spec.length, d, offset=5, dtype=work))()
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((2, spec.length, d)) * 4)
    x[0, 0, :3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    x = x.to(getattr(torch, dtype))
    expected = (x.to(getattr(torch, work)) + torch.from_numpy(pe)).to(getattr(torch, dtype))
    given = x if dtype == "bfloat16" else x.numpy()
    got = torch.as_tensor(REGISTRY.get("numba-fused-forward").build(spec)(given))
    np.testing.assert_array_equal(got.to(torch.float64).numpy(), expected.to(torch.float64).numpy())


@pytest.mark.parametrize("where", ["table", "rotary"])
def test_fresh_outputs_are_not_faulted_in_before_the_kernel(where, threads):
    """A fresh output's pages are faulted in by the kernel's threads as they write them, not all
    first by the calling thread (that pass took twice the CPU of a two-thread call:
    docs/fast.md, *First calls*): taking a 32 MiB output costs no more than a couple of faults."""
    import resource

    from harness.core.kinds.rotary import RotarySpec
    from harness.impls.fast_numba import outputs
    from harness.impls.rotary.numba import Rotary

    threads(min(2, numba.config.NUMBA_NUM_THREADS))
    shape = (2048, 4096)   # 32 MiB of float32: 16 huge pages, 8192 small ones
    rotary = Rotary(RotarySpec(8, 16))
    take = outputs(shape, np.float32, recycle=False) if where == "table" else lambda: rotary.empty(shape, 0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = take()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert out.shape == shape and faults < 8
