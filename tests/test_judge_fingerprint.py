"""The corners of bench's fingerprint judge (issue 26): one judge keeps each cell's own
reference (batch and heads included), a result exactly at the size limit is still judged, the
sampled places are distinct, and the worker reads the run's seed from its environment.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.bench import fingerprint
from harness.bench.fingerprint import SAMPLES, SEED_ENV, Judge, indices, sample
from harness.core import kinds
from harness.core.kinds.fields import DTYPES
from tests.test_judge_bench_apart import cell, expected_values


def honest(c) -> dict:
    right = sample(expected_values(c), 7)
    return {**c.as_dict(), "status": "ok", "sampled": (right, right)}


def test_one_judge_holds_each_cell_to_its_own_reference():
    judge = Judge(seed=7)
    apply = cell("apply", "rotary", length=64, width=16, batch=2)
    cells = [cell(length=256, width=16), cell(length=128, width=16),
             cell("forward", length=64, width=16, batch=3), dataclasses.replace(apply, heads=3)]
    for c in cells + cells[::-1]:
        assert judge.problem(honest(c)) == "", c


def test_a_result_exactly_at_the_size_limit_is_judged(monkeypatch):
    c = cell(length=64, width=8)
    monkeypatch.setattr(fingerprint, "JUDGED_ELEMENTS", c.elements)
    row = {**c.as_dict(), "status": "ok", "sampled": (tuple([9.0] * c.elements),)}
    assert Judge(seed=1).problem(row).startswith("first call: its values at 512 sampled places")


def test_the_sampled_places_are_distinct():
    assert len(set(indices(10 * SAMPLES, 5).tolist())) == SAMPLES


def test_a_worker_samples_with_the_seed_its_supervisor_set(monkeypatch):
    seed = fingerprint.new_seed()
    assert isinstance(seed, int) and 0 <= seed < 2 ** 32
    monkeypatch.setenv(SEED_ENV, str(seed))
    assert fingerprint.worker_seed() == seed
    monkeypatch.setenv(SEED_ENV, "not a seed")
    assert fingerprint.worker_seed() is None
    monkeypatch.delenv(SEED_ENV)
    assert fingerprint.worker_seed() is None


@pytest.mark.parametrize("size", [SAMPLES, SAMPLES + 1])
def test_a_result_of_up_to_samples_values_is_sampled_whole(size):
    assert len(indices(size, 3)) == min(size, SAMPLES)


@pytest.mark.parametrize("kind", sorted(kinds.KINDS))
def test_a_kinds_reference_does_not_depend_on_the_output_dtype(kind):
    """The judge shares one reference between a shape's dtypes (fingerprint.without_dtype)."""
    k = kinds.named(kind)
    (length, *_), (width, *_) = k.bench_sizes_quick
    specs = [k.bench_spec(length, width, dtype, k.first_convention) for dtype in DTYPES]
    assert len({fingerprint.without_dtype(s) for s in specs}) == 1
    first = k.reference(specs[0])
    for spec in specs[1:]:
        np.testing.assert_array_equal(k.reference(spec), first)


def test_the_judge_computes_a_shapes_reference_once_for_its_dtypes(monkeypatch):
    rows = [honest(dataclasses.replace(cell(length=128, width=16), dtype=dtype))
            for dtype in ("float32", "float64", "float16")]
    calls = []
    table = kinds.named("table")
    monkeypatch.setitem(kinds.KINDS, "table", dataclasses.replace(
        table, reference=lambda spec: calls.append(spec.dtype) or table.reference(spec)))
    judge = Judge(seed=7)
    for row in rows:
        assert judge.problem(row) == "", row["dtype"]
    assert calls == ["float32"]
