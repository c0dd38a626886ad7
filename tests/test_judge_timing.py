"""The physics floor (issue 26): a timing below half a fill of the same bytes, timed in the same
run, is implausible; at or above it, it is not; only cells timed ok are judged, roofs never. And
the load and thread rules that keep a timing out of recommendations and compare verdicts, row
by row and counted (their mutation survivors, docs/mutants.md).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.runs import flags

SHARE = flags.IMPLAUSIBLE_SHARE


@pytest.mark.parametrize("median_share, implausible", [
    (0.9 * SHARE, True), (0.999 * SHARE, True), (SHARE, False), (1.1 * SHARE, False), (3.0, False),
])
def test_a_time_below_half_a_fill_is_implausible(median_share, implausible):
    fill = 2e-3
    found = flags.implausible_flag(median_share * fill, fill)
    assert found.startswith("implausible: ") == implausible, found
    if implausible:
        assert f"{1 / median_share:.3g}x faster than a fill of the same bytes" in found
        assert f"below {SHARE:g}x the memory roof" in found


@pytest.mark.parametrize("median, fill", [(0.0, 1e-3), (-1e-6, 1e-3), (1e-6, 0.0), (1e-6, -1.0),
                                          (math.nan, 1e-3), (1e-6, math.nan)])
def test_no_timing_or_no_fill_is_no_finding(median, fill):
    assert flags.implausible_flag(median, fill) == ""


def test_only_implementation_cells_timed_ok_are_flagged_and_other_flags_kept():
    frame = pd.DataFrame({
        "status": ["ok", "ok", "ok", "error", "ok", "ok"],
        "median_s": [1e-6, 1e-6, 1e-6, 1e-6, 1e-3, 1e-6],
        "is_roof": [False, "True", "1", False, False, "false"],
        "flags": ["load: busy", "", None, "", "", None],
    })
    fill = pd.Series([1e-3] * 6)
    out = flags.with_implausible(frame, fill)
    assert out[0].startswith("load: busy; implausible: ")
    assert list(out[1:5]) == ["", "", "", ""]          # roofs, an error row, a plausible time
    assert out[5].startswith("implausible: ")
    assert frame["flags"][0] == "load: busy" and pd.isna(frame["flags"][5])   # not changed in place


def row(impl: str = "a", threads=1, median_s: float = 1e-3, status: str = "ok", **extra):
    return {"impl": impl, "workload": "table", "length": 64, "d_model": 64, "dtype": "float32",
            "threads": threads, "median_s": median_s, "status": status, **extra}


def test_rows_are_flagged_as_they_arrive_against_their_own_one_thread_time():
    running = flags.Running()
    assert running.flag(row()) == ""
    assert running.flag(row(threads=4, median_s=3.9e-3)) == ""
    slow = running.flag(row(threads=4, median_s=5e-3))
    assert slow == "threads: 5x slower at 4 threads than at 1 (> 4x)"
    assert running.flag(row(impl="b", threads=4, median_s=5e-3)) == ""     # another cell
    assert running.flag(row(threads=None, median_s=5e-3)) == ""            # 1 thread: no sibling
    assert running.flag(row(threads=4, median_s=2e-2)) == ""               # vs the new 1-thread


@pytest.mark.parametrize("status, median", [("error", 1e-3), ("ok", None), ("ok", math.nan),
                                            ("ok", "fast")])
def test_only_rows_timed_ok_are_flagged_as_they_arrive(status, median):
    running = flags.Running()
    running.flag(row(median_s=1e-4))
    assert running.flag(row(threads=4, median_s=median, status=status,
                            cores=1, others_busy=3.0)) == ""


def test_load_and_thread_flags_are_joined():
    running = flags.Running()
    running.flag(row(median_s=1e-4))
    both = running.flag(row(threads=2, median_s=1e-3, cores=2, others_busy=1.5))
    assert both.startswith("load: ") and "; threads: 10x slower at 2 threads" in both


# -- counting flagged cells: what bench's last lines and the report's first say ---------------

def test_flagged_count_counts_implementation_cells_timed_ok_and_no_roof():
    frame = pd.DataFrame({
        "status": ["ok", "ok", "ok", "ok", "error", "ok"],
        "median_s": [1e-3] * 6,
        "is_roof": [False, "TRUE", "1", True, False, "false"],
        "flags": ["load: busy", "load: busy", "threads: slow", "", "load: busy", None],
    })
    assert flags.flagged_count(frame) == (1, 2)          # rows 0 and 5 are timed ok, 0 flagged
    assert flags.flagged_count(frame.iloc[:0]) == (0, 0)


def test_each_rule_is_counted_from_the_flags_or_worked_out_from_the_rows():
    frame = pd.DataFrame({"flags": ["load: busy; threads: 5x", None, "implausible: 3x",
                                    "clock: off", "reload: no", "inputs: fixed"]})
    assert flags.kinds(frame) == {"load": 1, "threads": 1, "implausible": 1, "clock": 1,
                                  "inputs": 1}
    rows = pd.DataFrame([row(threads=1, median_s=1e-3), row(threads=4, median_s=1e-2)])
    assert flags.kinds(rows) == {"load": 0, "threads": 1, "implausible": 0, "clock": 0,
                                 "inputs": 0}


def test_a_missing_identity_field_and_an_empty_one_name_the_same_cell():
    running = flags.Running()
    one = row(median_s=1e-4)
    del one["dtype"]
    running.flag(one)
    assert running.flag(row(threads=4, median_s=1e-3, dtype=None)).startswith("threads: 10x")


def test_flagged_reads_the_flags_or_works_them_out_from_the_rows():
    assert list(flags.flagged(pd.DataFrame({"flags": ["", None, "x", "load: busy"]}))) == \
        [False, False, True, True]
    rows = pd.DataFrame([row(threads=1, median_s=1e-3), row(threads=4, median_s=1e-2)])
    assert list(flags.flagged(rows)) == [False, True]


def test_the_summary_names_every_rule_that_flagged_a_cell_or_says_none_did():
    rows = pd.DataFrame([row(), row(impl="b")])
    assert flags.summary(rows).startswith("bench: no cell flagged for load (of 2 timed ok)")
    rows["flags"] = ["implausible: 3x faster", "clock: 2x off"]
    assert flags.summary(rows) == (
        f"bench: 2 of 2 timed cells flagged, {flags.EXCLUDED}: 1 faster than a fill of the same "
        "bytes allows, 1 whose worker's clock disagreed with bench's own (`flags` in bench.csv)")


# -- the load and thread rules, row by row --------------------------------------------------

@pytest.mark.parametrize("fields, flag", [
    (dict(cores=2, threads=1, others_busy=1.7),
     "load: 1.7 cores busy with other processes (2 cores, 1 thread, > 1.5)"),
    (dict(cores=4, threads=2, others_busy=2.6),
     "load: 2.6 cores busy with other processes (4 cores, 2 threads, > 2.5)"),
    (dict(cores=2, threads=1, others_busy=1.5), ""),             # at the margin: not flagged
    # timed at 2 threads beside one busy core: NumPy's work ran on one and had its core ...
    (dict(cores=2, threads=2, threads_ran=1, others_busy=1.0), ""),
    # ... a parallel kernel's threads all ran, sharing what was left
    (dict(cores=2, threads=2, threads_ran=2, others_busy=1.0),
     "load: 1 core busy with other processes (2 cores, 2 threads, > 0.5)"),
    (dict(cores=2, threads=2, threads_ran=1, others_busy=1.7),
     "load: 1.7 cores busy with other processes (2 cores, 2 threads of which 1 ran, > 1.5)"),
    (dict(cores=2, threads=2, threads_ran=float("nan"), others_busy=1.0),   # not measured
     "load: 1 core busy with other processes (2 cores, 2 threads, > 0.5)"),
    (dict(cores=1, threads=1, others_busy=0.6),
     "load: 0.6 cores busy with other processes (1 core, 1 thread, > 0.5)"),
    (dict(cores=2, threads=None, others_busy=5.0), ""),          # no threads: nothing to judge
    (dict(cores=0, threads=1, others_busy=5.0), ""),
    (dict(cores=2, threads=1, load_before=2.6), "load: load average 2.6 on 2 cores (> 2.5)"),
    (dict(cores=2, threads=1, load_after=2.6), "load: load average 2.6 on 2 cores (> 2.5)"),
    (dict(cores=2, threads=1, load_before=2.5, load_after="n/a"), ""),
])
def test_the_load_rule(fields, flag):
    assert flags.load_flag(fields) == flag


@pytest.mark.parametrize("median_s, threads, one_thread_s, flag", [
    (5.5e-3, 2, 1e-3, "threads: 5.5x slower at 2 threads than at 1 (> 4x)"),
    (0.25, 2, 1e-3, "threads: 250x slower at 2 threads than at 1 (> 4x)"),
    (5e-3, 1, 1e-3, ""),                 # a 1-thread row is its own sibling
    (5e-3, 2, 0.0, ""),                  # no 1-thread time to hold it against
    (4e-3, 2, 1e-3, ""),
])
def test_the_thread_rule(median_s, threads, one_thread_s, flag):
    assert flags.thread_flag(median_s, threads, one_thread_s) == flag


def test_every_row_timed_ok_gets_its_flags_joined_and_every_other_row_none():
    frame = pd.DataFrame([
        row(median_s=1e-3, convention=None),                          # the 1-thread sibling
        row(threads=4, median_s=1e-2, convention="", cores=4, others_busy=3.0, clock="clock: x"),
        row(threads=4, median_s=1e-2, status="error"),
        row(threads=4, median_s=0.0),
        row(threads=4, median_s="fast"),
        row(impl="c", threads=None, median_s=9e-3),                   # unknown threads: 1
        row(impl="b", cores=2, load_before=2.6),
        row(impl="c", threads=4, median_s=0.09),
        row(impl="d", cores=2, load_after=2.6),
    ], index=[10, 11, 12, 13, 14, 15, 16, 17, 18]).drop(columns=["length"])
    assert list(flags.flags(frame)) == [
        "", "load: 3 cores busy with other processes (4 cores, 4 threads, > 0.5); threads: 10x "
        "slower at 4 threads than at 1 (> 4x); clock: x", "", "", "", "",
        "load: load average 2.6 on 2 cores (> 2.5)",
        "threads: 10x slower at 4 threads than at 1 (> 4x)",
        "load: load average 2.6 on 2 cores (> 2.5)"]
    assert flags.flags(frame.iloc[:0]).empty
    frame["is_roof"] = False
    assert flags.flagged_count(frame) == (4, 6)
    assert list(flags.with_implausible(frame.assign(flags=""), pd.Series(1.0, frame.index))) == \
        [f"implausible: {1 / m:.3g}x faster than a fill of the same bytes in this run (below 0.5x "
         "the memory roof: not writing its output, or a clock that lies)" if m else ""
         for m in (1e-3, 1e-2, 0, 0, 0, 9e-3, 1e-3, 0.09, 1e-3)]
