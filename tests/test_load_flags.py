"""Timings under load (issue 10, item 5): recorded per cell, flagged, kept out of verdicts.

Every load here is injected (fake samples, rows with chosen `others_busy`), so
nothing depends on how busy the machine running the tests is; one test reads real thread
times (a thread spinning beside the caller ran half the window, ten times the threshold).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from harness.bench import contention
from harness.bench.cells import Cell, Outcome, row
from harness.bench.measure import measure
from harness.bench.progress import Progress
from harness.bench.sweep import closing
from harness.report import flags as report_flags
from harness.report import gate
from harness.report import summary
from harness.report.compare import changes, overlap, slower
from harness.report.load import Run
from harness.report.recommend import recommend
from harness.runs import flags as flag_rules
from harness.runs import results
from tests.test_bench_validity import FakeBenchmark, builds_fresh, fixed_meter, impl_of

Sample = contention.Sample


def cell(impl: str = "numba-x", threads: int = 1, length: int = 4096, d_model: int = 64,
         is_roof: bool = False) -> Cell:
    return Cell(impl, "numba", "cpu", "table", "paper", length, d_model, "float32", threads,
                is_roof=is_roof)


def ok(c: Cell, median_s: float, others: float = 0.0, cores: int = 2,
       load: float = 0.5) -> dict:
    return row(c, Outcome("ok", median_s=median_s, iqr_s=median_s * 0.003, load_before=load,
                          load_after=load, others_busy=others, cores=cores))


def frame(rows: list[dict]) -> pd.DataFrame:
    """bench.csv as the report reads it (with the columns load_run derives)."""
    df = results.tidy(rows, "run", "machine")
    df["ok"] = (df["status"] == "ok") & (df["median_s"] > 0)
    df["elements"] = df["length"] * df["d_model"]
    df["size"] = df["length"].astype(str) + "x" + df["d_model"].astype(str)
    df["batch"] = df["batch"].astype(int)
    return df


def verify(*impls: str) -> pd.DataFrame:
    return pd.DataFrame({"impl": list(impls), "dtype": "float32", "status": "pass",
                         "max_abs_err": 1e-7, "max_position": 100_000})


# -- measuring ------------------------------------------------------------------------

def test_others_busy_is_machine_busy_time_minus_our_own_over_the_wall_time():
    before = Sample(wall=10.0, busy_s=100.0, own_s=5.0, load=0.7, cores=2)
    after = Sample(wall=12.0, busy_s=103.0, own_s=6.0, load=1.9, cores=2)
    assert contention.others_busy(before, after) == pytest.approx(1.0)   # (3 - 1) / 2 s
    assert contention.others_busy(after, after) != contention.others_busy(after, after)   # NaN
    cols = contention.columns(before, after)
    assert cols["threads_ran"] != cols["threads_ran"]          # no thread times: NaN
    assert cols["waited"] != cols["waited"]
    assert {k: v for k, v in cols.items() if k not in ("threads_ran", "waited")} == {
        "load_before": 0.7, "load_after": 1.9, "others_busy": pytest.approx(1.0), "cores": 2}


def test_threads_ran_counts_the_threads_that_ran_a_tenth_of_the_window():
    """Thread 3 ran 0.15 s of 2 s (under a tenth), thread 4 started in the window and ran 1 s."""
    before = Sample(10.0, 100.0, 5.0, 0.7, 2, {1: 3.0, 2: 0.5, 3: 1.0})
    after = Sample(12.0, 103.0, 6.0, 1.9, 2, {1: 5.0, 2: 0.9, 3: 1.15, 4: 1.0})
    assert contention.threads_ran(before, after) == 3.0


def test_waited_is_the_threads_run_delay_in_cores_over_the_window():
    """Thread 1 waited 0.3 s of 2 s, thread 2 0.1 s (thread 3 started in the window)."""
    before = Sample(10.0, 100.0, 5.0, 0.7, 2, {1: 3.0, 2: 0.5}, {1: 1.0, 2: 0.2})
    after = Sample(12.0, 103.0, 6.0, 1.9, 2, {1: 5.0, 2: 0.9, 3: 0.1}, {1: 1.3, 2: 0.3, 3: 0.0})
    assert contention.waited(before, after) == pytest.approx(0.2)


def test_a_short_cell_whose_thread_never_waited_is_not_flagged_whatever_the_ticks_read():
    """others_busy counts 10 ms ticks: beside one busy core of two, one-thread cells of 6-26 ms
    read 1.5-2.8 cores busy; a thread that waited for no CPU was not slowed by them."""
    row = {"cores": 2, "threads": 1, "threads_ran": 1, "others_busy": 2.5}
    assert flag_rules.load_flag({**row, "waited": 0.0}) == ""
    assert flag_rules.load_flag({**row, "waited": 0.3}).startswith("load: ")
    assert "waited 0.3 of a core" in flag_rules.load_flag({**row, "waited": 0.3})
    assert flag_rules.load_flag({**row, "waited": math.nan}).startswith("load: ")   # older runs


def test_threads_ran_is_measured_a_busy_second_thread_counts_a_sleeping_one_does_not():
    """A pool's threads outlive the call (a thread that ended is no longer in /proc)."""
    import threading
    import time

    def spin(seconds: float, stop: threading.Event = threading.Event()) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and not stop.is_set():
            pass

    def window(second: Callable[[threading.Event], None]) -> float:
        stop = threading.Event()
        pool = threading.Thread(target=second, args=(stop,))
        pool.start()
        before = contention.sample()
        spin(0.2)
        ran = contention.threads_ran(before, contention.sample())
        stop.set()
        pool.join()
        return ran

    assert window(lambda stop: stop.wait(5)) == 1.0            # asleep in the pool
    assert window(lambda stop: spin(5, stop)) == 2.0           # busy beside the caller


def test_every_measured_row_records_the_load_around_the_cell():
    """The meter is read after setup and after the timed rounds; the row carries the result."""
    meter = fixed_meter(Sample(0.0, 10.0, 1.0, 1.5, 2, {7: 0.5, 8: 0.5}, {7: 0.1, 8: 0.0}),
                        Sample(1.0, 11.8, 1.9, 2.5, 2, {7: 1.3, 8: 1.2}, {7: 0.3, 8: 0.0}))
    two_threads = Cell("x", "numpy", "cpu", "table", "paper", 64, 64, "float32", 2)
    outcome = measure(impl_of(builds_fresh), two_threads, FakeBenchmark(), "numpy=2", meter=meter)
    assert outcome.status == "ok"
    assert (outcome.load_before, outcome.load_after, outcome.cores) == (1.5, 2.5, 2)
    assert outcome.others_busy == pytest.approx(0.9)      # (1.8 busy - 0.9 ours) / 1 s
    assert outcome.waited == pytest.approx(0.2)           # thread 7 waited 0.2 s of 1 s
    flag = flag_rules.load_flag(row(two_threads, outcome))
    assert flag.startswith("load: 0.9 cores busy") and "waited 0.2 of a core" in flag
    assert results.tidy([row(two_threads, outcome)], "run", "machine")["waited"].iloc[0] == \
        pytest.approx(0.2)                                # into bench.csv


def test_a_real_sample_is_sane():
    sample = contention.sample()
    assert sample.cores >= 1 and sample.own_s >= 0
    assert math.isnan(sample.busy_s) or sample.busy_s >= 0


# -- the rules ---------------------------------------------------------------------------

def test_the_issue_case_is_flagged_by_the_thread_rule_and_load_by_the_load_rule():
    rows = [ok(cell(threads=1), 5e-6), ok(cell(threads=2), 14e-3),          # the issue: 2800x
            ok(cell(threads=1, length=64), 1e-6), ok(cell(threads=2, length=64), 3e-6),  # 3x: fine
            ok(cell("busy", threads=1), 1e-3, others=1.7),                # 1 thread: 1 core free
            ok(cell("quiet", threads=1), 1e-3, others=1.2),               # within the margin
            ok(cell("busy", threads=2), 1e-3, others=0.6),                # 2 threads: none free
            ok(cell("avg", threads=2), 1e-3, others=math.nan, load=3.1)]  # unmeasured: load average
    df = frame(rows).set_index("key")
    flags = df["flags"].fillna("")
    assert flags[cell(threads=2).key].startswith("threads: 2,800x slower at 2 threads")
    assert flags[cell(threads=2, length=64).key] == ""
    assert flags[cell("busy", threads=1).key].startswith("load: 1.7 cores busy")
    assert flags[cell("quiet", threads=1).key] == ""
    assert flags[cell("busy", threads=2).key].startswith("load: 0.6 cores busy")
    assert flags[cell("avg", threads=2).key].startswith("load: load average 3.1 on 2 cores")
    assert flags[cell(threads=1).key] == ""


def test_a_sibling_and_a_roof_are_the_same_cell_in_every_axis_heads_included():
    """The 1-thread sibling and the roof of a rotary apply over 8 heads are those over 8 heads,
    not the 4-head cells beside them (harness.runs.identity)."""
    def apply(impl: str, threads: int, heads: int, roof: bool = False) -> Cell:
        return Cell(impl, "numpy", "cpu", "apply", "neox", 256, 64, "float32", threads,
                    batch=2, is_roof=roof, heads=heads, kind="rotary")

    rows = [ok(apply("a", 1, 8), 2e-5), ok(apply("a", 1, 4), 1e-6), ok(apply("a", 2, 8), 1e-5),
            ok(apply("fill", 1, 4, roof=True), 1e-6), ok(apply("fill", 1, 8, roof=True), 1e-5)]
    df = frame(rows).set_index("key")
    assert df.loc[apply("a", 2, 8).key, "flags"] == ""        # 0.5x its 8-head sibling, not 10x
    assert df.loc[apply("a", 1, 8).key, "roof_ratio"] == pytest.approx(2.0)


def test_a_flagged_roof_is_no_yardstick():
    rows = [ok(cell("impl", threads=2), 4e-3),
            ok(cell("roof-a", threads=2, is_roof=True), 1e-3, others=1.5),   # under load
            ok(cell("roof-b", threads=2, is_roof=True), 2e-3)]
    df = frame(rows).set_index("key")
    assert df.loc[cell("impl", threads=2).key, "roof_s"] == 2e-3


def test_progress_lines_mark_flagged_cells():
    progress = Progress(3)
    assert "FLAGGED" not in progress.line(ok(cell(threads=1), 5e-6))
    line = progress.line(ok(cell(threads=2), 14e-3))
    assert line.endswith("FLAGGED (threads: 2,800x slower at 2 threads than at 1 (> 4x))")
    assert "FLAGGED (load: 1.7" in progress.line(ok(cell("busy"), 1e-3, others=1.7))


def test_the_sweep_ends_with_the_flagged_count_and_the_one_thing_to_do():
    frame = results.tidy([ok(cell(threads=1), 5e-6), ok(cell(threads=2), 14e-3),
                          ok(cell("busy"), 1e-3, others=1.7)], "run", "m")
    assert flag_rules.summary(frame) == (      # the log's line: why each was flagged
        "bench: 2 of 3 timed cells flagged, kept out of recommendations and compare verdicts: "
        "1 under load (other processes busy on more than the free cores + 0.5), 1 slower with "
        "more threads than 4x their 1-thread time (`flags` in bench.csv)")
    lines = closing(frame, Path("results/run-1"))
    assert lines[:2] == ["bench: 2 of 3 timed cells stayed flagged, left out of the answers:",
                         "  1 under load, 1 slower with more threads;"]
    assert lines[2].endswith("python -m harness bench --resume results/run-1")
    assert all(len(line) <= 100 for line in lines)
    assert closing(results.tidy([ok(cell(threads=1), 5e-6)], "run", "m")) == []


# -- verdicts ---------------------------------------------------------------------------

def issue_run(two_thread_numba_s: float) -> pd.DataFrame:
    """numba-x is the fastest at 1 thread; at 2 threads its time is `two_thread_numba_s`; four
    roofs at each size and thread count (the gate measures the noise between runs on them)."""
    rows = [ok(cell(f"roof-{i}", threads, length, is_roof=True), 1e-6 * (1 + i))
            for i in range(4) for threads in (1, 2) for length in (4096, 8192)]
    for length in (4096, 8192):
        rows += [ok(cell("numba-x", 1, length), 5e-6), ok(cell("numba-x", 2, length),
                                                           two_thread_numba_s),
                 ok(cell("torch-y", 1, length), 9e-6), ok(cell("torch-y", 2, length), 6e-6),
                 ok(cell("slow-z", 1, length), 2e-3, others=1.8)]       # under load
    return frame(rows)


def test_flagged_cells_stay_out_of_the_recommendation_and_are_named():
    picks = {(p.threads, p.impl): p for p in recommend(issue_run(14e-3),
                                                       verify("numba-x", "torch-y", "slow-z"))}
    two = picks[(2, "torch-y")]
    assert two.flagged == ("numba-x: 2 cell(s) flagged (threads)",)
    one = picks[(1, "numba-x")]
    assert one.flagged == ("slow-z: 2 cell(s) flagged (load)",)
    assert one.runner_up == "torch-y"          # slow-z is not ranked at all
    with_flags = recommend(issue_run(14e-3), verify("numba-x", "torch-y", "slow-z"),
                           include_flagged=True)
    assert all(p.flagged == () for p in with_flags)


def test_load_flags_stay_out_of_the_gate_but_a_thread_flag_the_change_caused_fails_it():
    """slow-z ran under load in both runs: not judged. numba-x at 2 threads was fine in the
    base and is 4,700x slower now: flagged `threads` in the new run only, which is what a
    change that broke the all-core path looks like, so it is judged and fails."""
    base, new = issue_run(3e-6), issue_run(14e-3)
    compared = changes(new, base)
    assert {c.impl for c in compared} == {"numba-x", "torch-y"}
    assert {(c.impl, c.threads) for c in slower(compared, 10)} == {("numba-x", 2)}
    lines = overlap(new, base)
    assert lines.flagged == 2        # slow-z, at both sizes
    assert "2 of the compared not judged for speed" in lines.describe()
    # the same 2-thread slowness already in the base: its time is no yardstick, not judged
    assert slower(changes(issue_run(14e-3), issue_run(14e-3)), 10) == []


def test_console_and_report_give_one_count_of_flagged_cells_roofs_and_narrower_frames_aside(
        tmp_path):
    """A flagged roof, and a flagged cell outside the rows the Recommendation is made from
    (another convention): the console's two lines, the report's top and its flagged section
    all say 2 of 3, and the roof is named apart (it once said 10 of 949 over 4 of 452)."""
    rows = [ok(cell("a", 1), 1e-3), ok(cell("b", 1), 2e-3, others=1.9),
            ok(cell("c", 1), 3e-3, others=1.9),
            ok(cell("roof-numpy-fill", 1, is_roof=True), 1e-4, others=1.9)]
    bench = frame(rows)
    narrower = bench[bench["impl"] != "c"]
    said = "2 of 3 timed cells"
    assert flag_rules.summary(bench).startswith(f"bench: {said} flagged")
    assert flag_rules.summary(bench).endswith("; and 1 of 1 roof cells")
    assert closing(bench)[:2] == [f"bench: {said} stayed flagged, left out of the answers:",
                                  "  2 under load;"]
    run = Run(tmp_path, {}, bench, verify("a", "b", "c"))
    assert summary.still_flagged(run).startswith(f"**{said} stayed flagged** (2 under load,")
    assert "**2 cells of 3 timed flagged** (2 under load)" in report_flags.section(run, narrower)


def test_console_and_report_say_which_flagged_cells_were_answered_at_fewer_threads(tmp_path):
    """Under one busy core, a 2-thread cell flagged for load timed again at 1 thread (the sweep's
    fallback) still has an answer: both ends say so, and count it once."""
    rows = [ok(cell("a", 2), 1e-3, others=1.0), ok(cell("a", 1), 2e-3, others=1.0),
            ok(cell("b", 2), 1e-3, others=1.0)]
    bench = frame(rows)
    said = "1 of them answered at fewer threads instead"
    assert flag_rules.answered_at_fewer(bench) == said
    assert closing(bench)[:2] == ["bench: 2 of 3 timed cells stayed flagged, left out of the answers:",
                                  f"  2 under load; {said};"]
    run = Run(tmp_path, {}, bench, verify("a", "b"))
    assert f"answer; {said}; to measure" in summary.still_flagged(run)
    assert flag_rules.answered_at_fewer(frame(rows[:1] + rows[2:])) == ""


def test_the_report_section_counts_flagged_cells_and_what_they_would_change(tmp_path):
    bench = issue_run(14e-3)
    run = Run(tmp_path, {}, bench, verify("numba-x", "torch-y", "slow-z"))
    text = report_flags.section(run)
    assert text.startswith("## Flagged and invalid cells")
    assert "**4 cells of 10 timed flagged** (2 under load, 2 slower with more threads)" in text
    assert "No recommendation would change with the flagged cells included." in text
    assert "| table | numba-x | 4096x64 float32 2 threads | 14 ms |" in text

    # a flagged cell that would have won (a fast cell measured while the machine was busy)
    rows = [ok(cell("a", 1), 1e-3), ok(cell("b", 1), 2e-3, others=1.9)]
    run = Run(tmp_path, {}, frame(rows), verify("a", "b"))
    changed = report_flags.section(run)
    assert "**1 cell of 2 timed flagged** (1 under load)" in changed
    assert "No recommendation would change with the flagged cells included." in changed
    rows = [ok(cell("a", 1), 2e-3), ok(cell("b", 1), 1e-3, others=1.9)]
    changed = report_flags.section(Run(tmp_path, {}, frame(rows), verify("a", "b")))
    assert "`table` medium float32 cpu 1 thread: **a**; with the flagged cells it would have " \
           "been b" in changed

    quiet = report_flags.section(Run(tmp_path, {}, frame([ok(cell("a", 1), 1e-3)]), verify("a")))
    assert "None: every timed cell ran with the cores it needed" in quiet


def test_the_section_takes_the_reports_own_recommendation_instead_of_making_it_again(tmp_path,
                                                                                     monkeypatch):
    """The report hands the section the picks it made (a third of the report's main-thread
    CPU went to making them again): the same text, one recommend() call (flagged included)."""
    from harness.report.recommend import recommend

    rows = [ok(cell("a", 1), 2e-3), ok(cell("b", 1), 1e-3, others=1.9)]
    run = Run(tmp_path, {}, frame(rows), verify("a", "b"))
    picks = recommend(run.bench, run.verify)
    calls = []
    monkeypatch.setattr(report_flags, "recommend",
                        lambda *a, **k: calls.append(k) or recommend(*a, **k))
    given = report_flags.section(run, run.bench, picks)
    assert calls == [{"include_flagged": True}]
    assert given == report_flags.section(run, run.bench) and "would have been b" in given


def test_a_workload_whose_every_cell_stayed_flagged_is_named_as_unanswered(tmp_path):
    """Under a busy core an all-core sweep can answer one workload of six: the top line and
    answer.txt name the workloads left with no answer, so a one-row table is not read as the
    run's whole answer."""
    busy = frame([ok(cell("a", 2), 1e-3, others=1.0), ok(cell("b", 2), 2e-3, others=1.0)])
    run = Run(tmp_path, {}, busy, verify("a", "b"))
    assert summary.unanswered(busy, ()) == ["table"]
    assert "**no answer for `table`**, every timed cell of theirs flagged" in \
        summary.still_flagged(run)
    assert summary.lines((), None, ["table"]) == [
        "no answer for table: every timed cell flagged (report.md)"]
    one_clean = frame([ok(cell("a", 2), 1e-3), ok(cell("b", 2), 2e-3, others=1.0)])
    assert summary.unanswered(one_clean, ()) == []



def test_a_cell_timed_beside_a_busy_core_is_not_left_out_though_its_flags_are():
    """1-thread cells under one busy core of two are not flagged (a core was free): the gate
    judges them against the noise between the runs (tests/test_gate_noise.py)."""
    rows = pd.DataFrame({"flags": ["", "", "load: 1.9 cores busy"], "others_busy": [0.1, 1.0, 1.9]})
    assert gate.left_out(rows).tolist() == [False, False, True]


def test_what_the_flagged_cells_would_change_is_asked_of_their_groups_only_invalid_ones_kept():
    """The flagged-included recommendation is made again only where a flagged timing lies, with
    every invalid row (an implementation invalid at another size stays barred); the text is the
    one a recommendation over every group gives."""
    flagged_fast = [ok(cell("a", 1), 2e-3), ok(cell("c", 1), 1e-4, others=1.9),
                    row(cell("c", 1, 65536, 256), Outcome("invalid", "lookup"))]
    elsewhere = [ok(cell("a", 1, 16, 16), 1e-5), ok(cell("b", 1, 16, 16), 2e-5)]
    run = Run(Path("."), {}, frame(flagged_fast + elsewhere), verify("a", "b", "c"))
    touched = report_flags._touched(run.bench)
    assert sorted(touched["impl"]) == ["a", "c", "c"] and "b" not in set(touched["impl"])
    text = report_flags.section(run)
    assert "No recommendation would change with the flagged cells included." in text


def test_the_answers_speed_up_compares_like_with_like_cores():
    """Beside one busy core the pick's 2-thread cell was flagged and answered at 1 thread; the
    usual choice (`named`) was clean at 2 threads because its work ran on one: it is compared
    (it used no more cores than the pick). A parallel one (both threads ran, in a quiet moment:
    two cores against the pick's one) is not, nor a flagged cell."""
    from harness.report.answer import answers
    from harness.report.recommend import recommend

    def speedup(usual_ran: float, usual_others: float = 1.0) -> float:
        rows = [ok(cell("fast", 2), 1e-3, others=1.0), ok(cell("fast", 1), 1e-3, others=1.0),
                {**ok(cell("plain", 2), 4e-3, others=usual_others), "threads_ran": usual_ran}]
        bench = frame(rows)
        picks = recommend(bench, verify("fast", "plain"))
        [found] = [a for a in answers(picks, bench, {}, "plain") if a.pick.impl == "fast"]
        assert found.pick.threads == 1 and found.usual == "plain"
        return found.speedup

    assert speedup(usual_ran=1) == pytest.approx(4.0)
    assert math.isnan(speedup(usual_ran=2, usual_others=0.0))     # it had two cores
    assert math.isnan(speedup(usual_ran=1, usual_others=1.9))     # flagged: never compared
