"""Tables and forwards by frequency pairs (impls/table/_pair_tile.py): the column tile's bits."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec
from harness.core.convert import to_numpy
from harness.core.registry import REGISTRY
from harness.impls.fast_numba import BLOCK

numba = pytest.importorskip("numba")

FIELDS = [{}, {"cos_first": True}, {"layout": "concat", "freq_shift": 1},
          {"layout": "concat", "cos_first": True, "scale": 0.5}]


def _storage(dtype: str) -> np.dtype:
    return np.dtype(np.uint16 if dtype in ("float16", "bfloat16") else dtype)


def _runs(spec: Spec):
    from harness.impls.table import numba_fast

    work = numba_fast._work(spec)
    assert numba_fast.by_pairs(spec, work)
    return [numba_fast._sweeper(spec, work, pairs=p) for p in (False, True)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fields", FIELDS)
@pytest.mark.parametrize("d", [16, 64])
def test_pair_rows_are_the_column_rows_bits(dtype, fields, d, monkeypatch):
    """A table by pairs writes the per-column tile's bits (the same two roundings, then one
    into the dtype), streamed and cached (misaligned), in every layout and function order;
    the registered table takes that path."""
    from harness.impls.table import numba_fast
    from harness.util.memory import aligned_owner

    monkeypatch.setattr(numba_fast, "STREAM_BYTES", 0)   # stream every output that can be
    spec = Spec(3 * BLOCK + 5, d, offset=70001, dtype=dtype, **fields)
    columns, pairs = _runs(spec)
    shape, kind = (1, spec.length, d), _storage(dtype)
    plain = columns(np.zeros(shape, kind))
    for skip in (0, kind.itemsize):   # bytes past a 64-byte boundary: 0 streamed, else cached
        owner = aligned_owner(shape, kind, 64)
        start = -owner.ctypes.data % 64 + skip
        out = owner[start:start + kind.itemsize * spec.length * d].view(kind).reshape(shape)
        assert np.array_equal(pairs(out), plain)
    table = np.ascontiguousarray(to_numpy(REGISTRY.get("numba-angleadd").build(spec)())).reshape(-1)
    bits = (table.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bfloat16" else table.view(kind)
    assert np.array_equal(bits, plain.reshape(-1))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("fields", FIELDS[:3])
def test_forward_pe_rows_by_pairs_are_the_column_rows_bits(dtype, fields):
    """A forward's PE rows by pairs add the same PE to x as the column loop, bit for bit."""
    spec = Spec(2 * BLOCK + 3, 32, offset=5, dtype=dtype, **fields)
    columns, pairs = _runs(spec)
    kind = _storage(dtype)
    x = np.random.default_rng(2).standard_normal((2, spec.length, 32)).astype(np.float32)
    if dtype == "bfloat16":
        x = (x.view(np.uint32) >> 16).astype(np.uint16)   # bfloat16 bits (truncated: any bits do)
    assert np.array_equal(pairs(np.empty(x.shape, kind), x), columns(np.empty(x.shape, kind), x))


@pytest.mark.parametrize("spec", [Spec(40, 40), Spec(40, 17, odd="pad"), Spec(40, 64, dtype="float64")],
                         ids=["20-frequencies", "odd-d", "float64"])
def test_tables_that_pairs_cannot_write_keep_the_column_tile(spec):
    """Pairs need whole groups of 8 frequencies, a cosine for every sine and float32 arithmetic."""
    from harness.impls.table import numba_fast

    assert not numba_fast.by_pairs(spec, numba_fast._work(spec))
