"""Flagged cells are measured again, later, within a bound; a retry that fails keeps the timing."""

from __future__ import annotations

from harness.bench import remeasure
from harness.bench.cells import Outcome, row, thin
from harness.bench.remeasure import MAX_ATTEMPTS, Retries, interleave
from harness.runs import results
from tests.test_bench_units import cell, ok


def busy_row(c, median_s: float = 1e-3) -> dict:
    """Timed while two other cores' worth of processes ran on a 2-core machine."""
    return row(c, Outcome("ok", median_s=median_s, iqr_s=median_s / 100, others_busy=2.0, cores=2))


def test_a_flagged_cell_waits_for_another_group_then_is_measured_again():
    retries = Retries(10, clock=lambda: 0.0)
    flagged, clean = cell(64, 64), cell(128, 64)
    retries.seen(busy_row(flagged), flagged, group=0)
    retries.seen(ok(clean, 1e-3), clean, group=0)
    assert retries.due(0) == []                       # not back to back with its first try
    assert retries.due(1) == [flagged]
    assert "load" in retries.still_flagged()[flagged.key]
    retries.seen(ok(flagged, 1e-3), flagged, group=1)  # clean this time
    assert retries.still_flagged() == {} and not retries.waiting


def test_noisy_cells_are_measured_again_too():
    retries = Retries(10, clock=lambda: 0.0)
    c = cell()
    retries.seen(row(c, Outcome("ok", median_s=1e-3, iqr_s=5e-4)), c, group=0)
    assert retries.due(1, final=True) == [c] and "noisy" in retries.why[c.key]


def noisy_row(c, median_s: float) -> dict:
    return row(c, Outcome("ok", median_s=median_s, iqr_s=median_s / 2))


def test_in_the_default_sweep_noise_far_behind_the_fastest_is_not_measured_again():
    from harness.core import kinds

    retries = Retries(100, clock=lambda: 0.0, contenders_only=True)
    fast, near, far = cell(impl="fast"), cell(impl="near"), cell(impl="far")
    usual = cell(impl=kinds.named("table").workload("table").usual_on("cpu")[0])
    roof = cell(impl="roof-fill", is_roof=True)
    retries.seen(ok(fast, 1e-3), fast, group=0)
    retries.seen(noisy_row(near, remeasure.CLOSE * 1e-3 * 0.99), near, group=0)
    retries.seen(noisy_row(far, remeasure.CLOSE * 1e-3 * 1.01), far, group=0)
    retries.seen(noisy_row(usual, 1.0), usual, group=0)      # its speed-ups are answers
    retries.seen(noisy_row(roof, 1.0), roof, group=0)        # the only roof: it binds
    busy = cell(impl="busy", length=128)                     # a flag is always measured again
    retries.seen(ok(cell(impl="fast", length=128), 1e-3), cell(impl="fast", length=128), group=0)
    retries.seen(busy_row(busy, 1.0), busy, group=0)
    due = retries.due(1)
    assert set(due) == {near, usual, roof, busy}
    assert "noisy" in retries.still_flagged()[far.key] and not retries.waiting
    # a sweep that prunes nothing (--full) measures every noisy cell again
    every = Retries(100, clock=lambda: 0.0)
    every.seen(ok(fast, 1e-3), fast, group=0)
    every.seen(noisy_row(far, 1.0), far, group=0)
    assert every.due(1) == [far]


def test_cells_flagged_for_load_go_before_cells_only_noisy():
    retries = Retries(8, clock=lambda: 0.0)
    noisy, busy = cell(64, 64), cell(128, 64)
    retries.seen(row(noisy, Outcome("ok", median_s=1e-3, iqr_s=5e-4)), noisy, group=0)
    retries.seen(busy_row(busy), busy, group=0)
    assert retries.due(1) == [busy, noisy][: int(remeasure.MAX_SHARE * 8)]


def test_attempts_are_bounded_per_cell():
    retries = Retries(10, clock=lambda: 0.0)
    c = cell()
    measured = 0
    for group in range(10):
        retries.seen(busy_row(c), c, group)
        measured += 1
        if not retries.due(group + 1, final=True):
            break
    assert measured == MAX_ATTEMPTS and c.key in retries.still_flagged()


def test_retries_stop_at_their_share_of_the_cells():
    retries = Retries(4, clock=lambda: 0.0)
    cells = [cell(64 * (i + 1), 64) for i in range(4)]
    for c in cells:
        retries.seen(busy_row(c), c, group=0)
    assert len(retries.due(1)) == int(remeasure.MAX_SHARE * 4)
    assert retries.due(2, final=True) == [] and not retries.waiting


def test_retries_stop_when_their_time_is_used_up():
    now = [0.0]
    retries = Retries(100, clock=lambda: now[0])
    c = cell()
    retries.seen(busy_row(c), c, group=0)
    now[0] = 100.0                                   # the sweep took 100 s...
    retries.timed(remeasure.MIN_SECONDS + remeasure.SHARE_OF_TIME * 100.0)   # ...and retries more than their share
    assert retries.due(1) == [] and c.key in retries.still_flagged()


def test_a_batch_of_retries_takes_only_the_cells_that_fit_their_time_left():
    """A sweep of 100 s over 10 measured cells (10 s a cell) leaves retries max(MIN_SECONDS,
    SHARE_OF_TIME x 100 s): that many cells' worth in one batch, the rest wait for a later one."""
    now = [0.0]
    retries = Retries(1000, clock=lambda: now[0])
    flagged = [cell(64 * (i + 1), 64) for i in range(10)]
    for c in flagged:
        retries.seen(busy_row(c), c, group=0)
    now[0] = 100.0
    fit = int(max(remeasure.MIN_SECONDS, remeasure.SHARE_OF_TIME * 100.0) / 10.0)
    assert len(retries.due(1)) == fit < len(flagged) and len(retries.waiting) == len(flagged) - fit
    retries.timed(1000.0)                             # that batch used the time up
    assert retries.due(2, final=True) == [] and not retries.waiting


def test_a_batch_is_sized_at_the_retries_own_seconds_per_cell_where_slower():
    """A batch starts its workers afresh, so retries cost more a cell than the sweep did: after
    one of 10 s a cell, a sweep of 5 s a cell leaves room for half as many."""
    now = [0.0]
    retries = Retries(1000, clock=lambda: now[0])
    flagged = [cell(64 * (i + 1), 64) for i in range(200)]
    for c in flagged:
        retries.seen(busy_row(c), c, group=0)
    now[0] = 1000.0                                   # 5 s a measured cell
    retries.timed(10.0, cells=1)
    left = max(remeasure.MIN_SECONDS, remeasure.SHARE_OF_TIME * (1000.0 - 10.0)) - 10.0
    assert 1 < len(retries.due(1)) == int(left / 10.0) < int(left / 5.0)


def test_interleave_takes_turns_between_implementations():
    cells = [cell(64, 64, impl="a"), cell(128, 64, impl="a"), cell(64, 64, impl="b")]
    assert [c.impl for c in interleave(cells)] == ["a", "b", "a"]


def test_the_newest_timing_is_kept_and_a_failed_retry_does_not_replace_it():
    first, again = busy_row(cell(), 5e-3), ok(cell(), 1e-3)
    failed = row(cell(), Outcome("skip", "predicted over budget"))
    df = results.tidy([first, again, failed], "run", "machine")
    assert len(df) == 1 and df["median_s"][0] == 1e-3 and df["attempts"][0] == 3
    assert df["flags"][0] == ""


def test_raw_rounds_are_thinned_evenly_in_the_order_they_ran():
    assert thin(range(10), 5) == (0.0, 2.0, 4.0, 6.0, 8.0)
    assert thin([3.0, 1.0]) == (3.0, 1.0)


def test_a_cell_whose_clock_or_inputs_were_caught_is_never_measured_again():
    """A retry in a fresh worker can time too briefly for the supervisor's clock check, and the
    newest row is the one reported: measuring a caught cell again could only lose the catch."""
    retries = Retries(10, clock=lambda: 0.0)
    for i, verdict in enumerate(("clock", "inputs")):
        c = cell(64 * (i + 1), 64)
        caught = {**busy_row(c), verdict: f"{verdict}: caught"}     # noisy and loaded too
        retries.seen(caught, c, group=0)
    assert retries.due(1, final=True) == [] and retries.still_flagged() == {}


def loaded_row(c, others_busy: float, cores: int = 2) -> dict:
    """Timed while `others_busy` cores' worth of other processes ran."""
    return row(c, Outcome("ok", median_s=1e-3, iqr_s=1e-5, others_busy=others_busy, cores=cores))


def test_a_cell_flagged_for_load_at_all_cores_falls_back_to_the_cores_left():
    """Under one busy core of two, every 2-thread cell is flagged: the same cell at 1 thread is
    queued beside its retry, outside the retries' count bound, once."""
    retries = Retries(1, clock=lambda: 0.0)          # a quarter of 1 cell: no room for retries
    two = cell(64, 64, threads=2)
    retries.seen(loaded_row(two, others_busy=1.0), two, group=0)
    one = cell(64, 64, threads=1)
    assert retries.due(0) == []                      # not back to back with its first try
    assert retries.due(1) == [one]                   # the fallback, though retries have no room
    assert retries.cell(one.key) == one
    retries.seen(loaded_row(one, others_busy=1.0), one, group=1)   # 1 thread: clean
    assert retries.due(2, final=True) == [] and not retries.pending
    assert one.key not in retries.still_flagged() and two.key in retries.still_flagged()


def test_no_fallback_where_the_cell_is_planned_or_the_cores_left_are_as_many():
    two, one = cell(threads=2), cell(threads=1)
    planned = Retries(10, clock=lambda: 0.0, planned=frozenset({one.key}))
    planned.seen(loaded_row(two, others_busy=1.0), two, group=0)
    assert planned.due(1) == [two]                   # its retry only: the 1-thread cell is planned
    four = cell(threads=4)
    light = Retries(10, clock=lambda: 0.0)
    light.seen(loaded_row(four, others_busy=1.0, cores=4), four, group=0)
    assert [c.threads for c in light.due(1)] == [3, 4]


def test_the_threads_left_follow_the_load_rule():
    assert remeasure.fewer_threads({"cores": 2, "others_busy": 1.0}, 2) == 1
    assert remeasure.fewer_threads({"cores": 2, "others_busy": 2.0}, 2) == 1   # at least one
    assert remeasure.fewer_threads({"cores": 8, "others_busy": 2.2}, 8) == 6
    assert remeasure.fewer_threads({"cores": 8}, 8) == 4           # load average only: halve


def test_before_the_end_a_batch_waits_for_enough_queued_cells():
    """Each batch starts a worker per backend: a few queued cells wait for more, or the end."""
    retries = Retries(100, clock=lambda: 0.0, min_batch=3)
    flagged = [cell(64 * (i + 1), 64) for i in range(3)]
    for c in flagged[:2]:
        retries.seen(busy_row(c), c, group=0)
    assert retries.due(1) == []                          # two of three: they wait
    assert retries.due(1, final=True) == flagged[:2]     # the end drains them
    for c in flagged:
        retries.seen(busy_row(c), c, group=1)
    assert retries.due(2) == flagged                     # three: a batch


def test_a_fallback_joins_a_later_group_of_its_worker_instead_of_a_batch_of_its_own():
    """A fallback (a cell at fewer threads) whose worker a later group starts anyway is timed
    there, in its size's place; a retry, or a fallback no later group serves, keeps its batch."""
    from harness.bench.cells import Cell
    from harness.bench.sweep import fold, groups

    def at(backend: str, impl: str, threads: int, length: int = 64) -> Cell:
        return Cell(impl, backend, "cpu", "table", "paper", length, 64, "float32", threads)

    later = groups([at("torch", "t", 1, 32), at("torch", "t", 1, 128)])
    fallback, alone, retry = at("torch", "u", 1), at("numpy", "n", 1), at("torch", "u", 2)
    added = []
    console = type("Console", (), {"more_cells": lambda self, n, cells: added.extend(cells)})()
    keep = fold([fallback, alone, retry], {c.key: c for c in (fallback, alone)}, later, False,
                console)
    assert keep == [alone, retry] and added == [fallback]
    assert len(later) == 1 and [c.length for c in later[0].cells] == [32, 64, 128]
    assert fallback in later[0].cells and later[0].name == "torch-1t"
