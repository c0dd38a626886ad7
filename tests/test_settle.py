"""Untimed calls until the allocator settles (harness.bench.settle): a call that still faults in
new pages is not what the rounds should be sized by."""

from __future__ import annotations

import mmap

from harness.bench import settle

PAGE = 4096


def faulting_for(calls: int, pages: int = 256):
    """A call that writes `pages` pages of a new mapping in each of its first `calls` calls (kept:
    no page is reused, as malloc's freed memory could be), then none; and the list of calls made."""
    kept: list[mmap.mmap] = []
    made: list[int] = []

    def call():
        made.append(1)
        if len(made) <= calls:
            block = mmap.mmap(-1, pages * PAGE)
            for page in range(pages):
                block[page * PAGE] = 1
            kept.append(block)
        return None
    return call, made


def test_calls_until_one_faults_in_no_new_pages():
    call, made = faulting_for(3)
    settle.settle(call, None, budget_s=10.0)
    assert len(made) == 4          # three that fault, the fourth that does not


def test_a_call_that_never_settles_stops_at_the_bound():
    call, made = faulting_for(10 ** 6)
    settle.settle(call, None, budget_s=10.0)
    assert len(made) == settle.SETTLE_CALLS


def test_the_budget_bounds_the_calls_and_the_reset_runs_before_each():
    call, made = faulting_for(10 ** 6)
    resets: list[int] = []
    settle.settle(call, lambda: resets.append(len(made)), budget_s=0.0)
    assert len(made) == 1 and resets == [0]


def test_the_seconds_returned_are_the_last_calls():
    import time

    def call():
        time.sleep(0.02)
    assert 0.015 < settle.settle(call, None, budget_s=1.0) < 0.5


def test_a_cell_is_timed_only_once_its_calls_stopped_faulting():
    """measure (harness.bench.measure): the first, warm and peak-memory calls, then settling
    calls, then the timed ones, none of which still faults. Without the settling calls the
    benchmark's would be calls 4-6, each faulting in new pages."""
    from harness.bench.measure import measure
    from tests.test_bench_validity import QUIET, FakeBenchmark, cell, correct_table, impl_of

    faulted: list[bool] = []

    def build(spec):
        call, made = faulting_for(8)

        def table():
            before = settle.page_faults()
            call()
            faulted.append(settle.page_faults() - before >= settle.SETTLED_PAGES)
            return correct_table(spec)
        return table

    bench = FakeBenchmark()
    outcome = measure(impl_of(build), cell(), bench, "numpy=1", meter=QUIET)
    assert outcome.status == "ok", outcome.reason
    assert faulted[:8] == [True] * 8 and faulted[-bench.calls:] == [False] * bench.calls
