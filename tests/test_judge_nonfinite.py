"""NaN and Inf fail wherever they are (issue 26): first and last row and column, every part of a
tuple result, every batch entry, either side of the finiteness scan's chunk boundaries; and the
comparison fails them by itself, without the scan.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec
from harness.core import checks
from tests.judged import DTYPES, SPECS, callable_returning, judge_here, rounded

POISONS = (np.nan, np.inf, -np.inf)


def corners(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """First and last row and column, in the first and last entry of every leading axis (a
    tuple's part, a batch entry, a head)."""
    lead = [tuple(0 if (bits >> i) & 1 == 0 else n - 1 for i, n in enumerate(shape[:-2]))
            for bits in range(2 ** len(shape[:-2]))]
    ends = [(r, c) for r in (0, shape[-2] - 1) for c in (0, shape[-1] - 1)]
    return sorted({head + end for head in lead for end in ends})


def poisoned_at(where: tuple[int, ...], value: float):
    def make(expected, allowed):
        out = expected.copy()
        out[where] = value
        return out
    return make


def shape_of(workload: str) -> tuple[int, ...]:
    """The result's shape (parts stacked first), from a callable that records what it built."""
    spec = SPECS[workload]("float32")
    seen = []
    judge_here(callable_returning(spec, workload, lambda e, a: seen.append(e.shape) or e),
                   spec, workload=workload)
    return seen[0]


@pytest.mark.parametrize("workload", sorted(SPECS))
def test_a_nan_or_inf_in_any_corner_of_any_part_or_batch_entry_fails(workload):
    spec = SPECS[workload]("float32")
    places = corners(shape_of(workload))
    assert len(places) >= 4
    for i, where in enumerate(places):
        value = POISONS[i % len(POISONS)]
        result = judge_here(callable_returning(spec, workload, poisoned_at(where, value)),
                                spec, workload=workload)
        assert result.status == "fail", (workload, where, value, result.reason)
        assert "NaN/Inf" in result.reason, result.reason


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_fails_in_every_dtype(dtype):
    spec = SPECS["table"](dtype)
    last = (spec.length - 1, spec.d_model - 1)
    result = judge_here(callable_returning(spec, "table", poisoned_at(last, np.nan)), spec)
    assert result.status == "fail" and "NaN/Inf" in result.reason, result.reason


# -- the scan works a block of rows at a time: poison either side of every boundary -------

@pytest.mark.parametrize("parts", [(), ("cos", "sin")])
@pytest.mark.parametrize("value", POISONS)
def test_nonfinite_values_either_side_of_every_chunk_boundary_fail(monkeypatch, parts, value):
    spec = Spec(50, 6)
    rows_per_chunk = 7      # not a divisor of 50: the last chunk is a short one
    monkeypatch.setattr(checks, "FINITE_CHUNK_ELEMENTS", rows_per_chunk * spec.d_model)
    good = rounded(np.stack([np.zeros((spec.length, spec.d_model))] * max(1, len(parts))),
                   "float32")
    expected = good if parts else good[0]
    allowed = np.full(expected.shape, 1e-3)
    length = spec.length      # each part is scanned on its own, chunk by chunk
    boundaries = sorted({part * length + r for part in range(len(parts) or 1)
                         for start in range(0, length + 1, rows_per_chunk)
                         for r in (start - 1, start) if 0 <= r < length})
    for row in boundaries:
        for column in (0, spec.d_model - 1):
            out = expected.astype(np.float32).reshape(-1, spec.d_model)
            out[row, column] = value
            out = out.reshape(expected.shape)
            result = out if not parts else tuple(out[i] for i in range(len(parts)))
            got = checks.compare(result, expected, allowed, "float32", parts)
            assert got.reason is not None and "NaN/Inf" in got.reason, (row, column, got)
            assert f"position {row % spec.length}, column {column}" in got.reason


def test_compare_fails_a_nan_even_when_the_finiteness_scan_misses_it(monkeypatch):
    """A one-character slip in the scan must not pass a NaN: the error test fails it too."""
    monkeypatch.setattr(checks, "nonfinite", lambda arr: None)
    expected = np.zeros((4, 4))
    for value in POISONS:
        out = np.zeros((4, 4), np.float32)
        out[3, 3] = value
        got = checks.compare(out, expected, np.full((4, 4), 1e-3), "float32")
        assert got.reason is not None, value
        assert (got.worst, got.err_ratio > 1 or np.isnan(got.err_ratio)) == ((3, 3), True)


@pytest.mark.parametrize("shape, where, found", [
    ((5,), (3,), (0, 3)),                      # a 1-D result: one row
    ((1,), (0,), (0, 0)),                      # a single value
    ((2, 3, 5), (1, 2, 4), (2, 4)),            # batched: the position within its batch entry
    ((4, 3, 2), (3, 0, 1), (0, 1)),
])
def test_the_scan_counts_every_bad_value_and_places_the_first_in_its_row(shape, where, found):
    arr = np.zeros(shape)
    arr[where] = np.nan
    assert checks.nonfinite(arr) == (1, found)
    arr.reshape(-1)[-1] = np.inf
    count = 1 if np.ravel_multi_index(where, shape) == arr.size - 1 else 2
    assert checks.nonfinite(arr) == (count, found)
    assert checks.nonfinite(np.zeros(shape)) is None
    assert checks.nonfinite(np.zeros((0, 3))) is None
