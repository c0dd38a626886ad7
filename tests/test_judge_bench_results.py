"""The judge's checks of what a bench cell returns: a tuple result judged part by part, and a
stale result named by what was tried (split from test_judge_retention.py: results, not retention)."""

from __future__ import annotations

import numpy as np

from harness.bench import validity
from harness.bench.cells import Cell

def rotary_cell(length: int = 32) -> Cell:
    return Cell("x", "numpy", "cpu", "cache", "neox", length, 16, "float32", 1, kind="rotary")


def cos_sin(c: Cell):
    spec = c.spec()
    angles = np.arange(spec.length)[:, None] * spec.inv_freq()[np.arange(16) % 8][None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def test_bench_takes_a_tuple_result_part_by_part():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    assert validity.output_problem((cos, sin), c) is None
    assert "expected a tuple (cos, sin)" in validity.output_problem(np.stack([cos, sin]), c)
    assert validity.stale_problem((cos, sin), cos_sin(c), True, c) is None
    sin[3, 4] = np.nan
    assert validity.output_problem((cos, sin), c) == \
        "first call: sin: 1 NaN/Inf values (first at position 3, column 4)"


def test_bench_names_a_stale_result_by_what_was_tried():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    assert validity.stale_problem((cos, sin), (cos, sin.copy()), False, c) == \
        "returned the same buffer twice: a cached result, not a builder"
    poisoned = (np.full_like(cos, np.nan), sin)
    assert validity.stale_problem((cos, sin), poisoned, True, c).startswith(
        "after poisoning the first result: cos: ")
    assert validity.stale_problem((cos, sin), poisoned, True, c).endswith(
        "(a cached result, not a builder)")
    assert validity.stale_problem((cos.copy(),), poisoned, False, c).startswith(
        "second call: cos: ")
    assert validity.stale_problem((cos.copy(),), (cos_sin(c)[0],), True, c) == \
        "second call: returned 1 items, expected a tuple (cos, sin)"


def table_cell(dtype: str = "float64") -> Cell:
    return Cell("x", "numpy", "cpu", "table", "concat", 16, 8, dtype, 1)


def test_the_first_values_are_the_well_formed_result_joined_or_none():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    np.testing.assert_array_equal(validity.first_values((cos, sin), c), np.stack([cos, sin]))
    assert validity.first_values(np.stack([cos, sin]), c) is None        # not the tuple
    assert validity.first_values((cos.astype(np.float64), sin), c) is None   # another dtype
    assert validity.first_values((cos[1:], sin), c) is None             # another shape
    for out in ((cos, sin), np.stack([cos, sin]), (cos[1:], sin)):    # both answers in one look
        why, values = validity.first_result(out, c)
        assert why == validity.output_problem(out, c)
        assert (values is None) == (validity.first_values(out, c) is None) == (why is not None)


def problem(out, first, c: Cell):
    """Why a timed result is invalid (None: it is not); its values come back only when valid."""
    why, values = validity.timed_problem(out, first, c)
    assert (values is None) == (why is not None), (why, values)
    return why


def test_a_timed_tuple_result_is_judged_part_by_part_against_the_first():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    first = validity.first_values((cos, sin), c)
    assert problem((cos, sin), first, c) is None
    np.testing.assert_array_equal(validity.timed_problem((cos, sin), first, c)[1], first)
    assert problem((cos, sin + 0.5), first, c).startswith(
        "a call under the benchmark's timer returned other values than its first call")
    assert problem((cos, sin[1:]), first, c).startswith(
        "a call under the benchmark's timer: sin: shape ")


def test_a_timed_result_may_stray_up_to_its_bound_from_the_first_and_no_further():
    """The bound is TIMED_RTOL of the first result's largest magnitude, at least of 1."""
    c = table_cell()
    zeros = np.zeros(c.shape)
    bound = validity.TIMED_RTOL
    at_bound = zeros.copy()
    at_bound[3, 5] = bound
    assert problem(at_bound, zeros, c) is None                 # exactly at it: the same
    assert problem(1.5 * at_bound, zeros, c) is not None       # magnitude < 1: bound 1x
    big = np.full(c.shape, 100.0)
    assert problem(big + 50 * at_bound, big, c) is None        # 100x the magnitude
    assert "max difference 0.2" in problem(big + 200 * at_bound, big, c)


def test_without_first_values_a_timed_result_is_only_checked_well_formed():
    c = table_cell()
    assert problem(np.ones(c.shape), None, c) is None
    assert problem(np.full(c.shape, np.nan), None, c).startswith(
        "a call under the benchmark's timer: ")


def test_a_table_cell_is_timed_on_its_convention_in_its_dtype():
    spec = Cell("x", "numpy", "cpu", "table", "fairseq", 16, 8, "float16", 1).spec()
    assert (spec.length, spec.d_model, spec.dtype) == (16, 8, "float16")
    assert (spec.layout, spec.freq_shift, spec.offset) == ("concat", 1, 2)


def test_verdict_only_checks_judge_a_tuple_part_by_part_without_joining_it(monkeypatch):
    """The first-call and stale checks need only a verdict: a large apply's q and k are not
    joined into the canonical copy there (a join of 2 x 134 MB costs seconds on a small VM);
    a NaN in either part is still found. first_values, which keeps the values, still joins."""
    from harness.core.kinds.rotary import apply

    c = Cell("x", "numpy", "cpu", "apply", "neox", 32, 16, "float32", 1, batch=1, heads=2,
             kind="rotary")
    q, k, _ = c.work.arguments(c.spec(), c.batch, c.heads)
    joins = []
    canonical = apply.canonical
    monkeypatch.setattr(apply, "canonical", lambda *a: joins.append(1) or canonical(*a))
    assert validity.output_problem((q, k), c) is None
    assert validity.stale_problem((q, k), (q.copy(), k.copy()), True, c) is None
    assert joins == []
    bad = k.copy()
    bad[0, 1, 2, 3] = np.nan
    assert validity.stale_problem((q, k), (q.copy(), bad), True, c).startswith(
        "after poisoning the first result: k: 1 NaN/Inf values")
    assert validity.output_problem((q, bad), c).startswith("first call: k: 1 NaN/Inf")
    assert joins == []
    assert validity.first_values((q, k), c).shape == (2, 1, 2, 32, 16) and joins == [1]


def test_stacked_repeats_k_heads_only_where_k_has_fewer():
    from harness.core.kinds.rotary.reference import stacked

    q = np.random.default_rng(0).standard_normal((1, 4, 8, 6))
    for k in (q[:, ::-1].copy(), q[:, :2].copy(), q[:, :1].copy()):
        np.testing.assert_array_equal(stacked(q, k), np.stack([q, np.repeat(k, 4 // k.shape[1], 1)]))


def test_a_verdict_only_check_reads_a_result_in_place_and_a_snapshot_copies_it():
    from harness.core.checks import well_formed
    from harness.core.observe import snapshot

    table = np.ones((4, 6), dtype=np.float32)
    assert np.shares_memory(snapshot(table, copy=False).array, table)
    assert not np.shares_memory(snapshot(table).array, table)       # survives poisoning
    assert well_formed(table, (4, 6), "float32", joined=False) == (None, None)
    table[2, 3] = np.inf
    assert well_formed(table, (4, 6), "float32", joined=False)[0] == \
        "1 NaN/Inf values (first at position 2, column 3)"


def test_values_sampled_at_once_are_read_in_place_and_the_first_calls_are_copied():
    """The timed and the after-the-rounds results are sampled before another call: no copy of a
    large table to pay for; the first call's values are held against the timed ones: a copy."""
    c = Cell("x", "numpy", "cpu", "table", "paper", 8, 4, "float32", 1)
    out = np.ones((8, 4), dtype=np.float32)
    _, first = validity.first_result(out, c)
    assert not np.shares_memory(first, out)
    assert np.shares_memory(validity.first_values(out, c), out)
    why, timed = validity.timed_problem(out, first, c)
    assert why is None and np.shares_memory(timed, out)
