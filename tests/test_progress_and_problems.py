"""What the terminal says: an ETA that start-up does not inflate, and problems shown whole."""

from __future__ import annotations

from harness import Spec
from harness.bench.progress import Progress
from harness.core.checks import Check
from harness.verbs import verify


def row(i: int) -> dict:
    return {"impl": f"impl{i}", "workload": "table", "length": 64, "d_model": 64,
            "dtype": "float32", "threads": 1, "status": "ok", "median_s": 1e-4, "iqr_s": 1e-6,
            "reason": ""}


def test_eta_is_not_inflated_by_the_first_cells_start_up():
    """30 s of worker start-up and JIT, then a cell every 0.2 s: 95 cells left take ~19 s
    (the mean over the first cells said almost 10 minutes)."""
    times = iter([0.0, 30.0, 30.2, 30.4, 30.6, 30.8])
    progress = Progress(100, clock=lambda: next(times))
    lines = [progress.line(row(i)) for i in range(5)]
    assert lines[0].endswith("ETA ...") and lines[1].endswith("ETA ...")
    assert lines[-1].endswith("ETA 19s"), lines[-1]


def test_first_problem_is_whole_in_files_and_below_the_terminal_table(tmp_path):
    reason = "error 0.5 > tolerance 1e-3 at position 123456, column 7 " + "x" * 150 + " END"
    spec = Spec(8, 4)
    checks = [Check("bad-impl", "numpy", "cpu", "table", spec, "fail", reason)]
    rows = verify.summary(checks)
    assert rows[0]["first_problem"].endswith(" END")             # not cut in the data
    text = verify.terminal_summary(rows)
    table, below = text.split("first problems in full:")
    assert "(in full below)" in table and " END" not in table
    assert "END" in below and all(len(line) <= verify.TERMINAL_WIDTH for line in below.splitlines())
    verify.write_outputs(checks, tmp_path)
    assert " END" in (tmp_path / "verify.md").read_text()


def test_eta_weighs_the_cells_left_by_their_size():
    """Ten small cells at 0.1 s each, then ten cells of a 64 MiB table at one thread (nine times
    the weight): the ETA counts what is left by weight, not as ten more small cells."""
    from harness.bench.cells import Cell
    from harness.bench.progress import weight

    small = [Cell(f"s{i}", "numpy", "cpu", "table", "paper", 64, 64, "float32", 1)
             for i in range(10)]
    large = [Cell(f"l{i}", "numpy", "cpu", "table", "paper", 16384, 1024, "float32", 1)
             for i in range(10)]
    assert weight(large[0]) == 9.0 and weight(small[0]) < 1.01
    times = iter([0.0] + [0.1 * (i + 1) for i in range(10)])
    progress = Progress(20, clock=lambda: next(times))
    progress.expect(small + large)
    for c in small:
        progress.line({**row(0), "key": c.key, "bytes_out": c.bytes_out})
    assert progress.left_s() > 10 * 9 * 0.099                       # not 10 x 0.1 s
    assert set(progress.pending) == {c.key for c in large}


def test_a_burst_of_skipped_cells_does_not_shrink_the_eta():
    """Five cells a second apart, then 25 skipped at once (pruned as far behind): the 20 cells
    left still take about 20 s, not the skips' zero gaps (the default sweep's console read
    ETA 1m27s with 5.5 minutes to come)."""
    times = iter([0.0] + [float(i + 1) for i in range(5)] + [5.0] * 25)
    progress = Progress(50, clock=lambda: next(times))
    for i in range(5):
        progress.line(row(i))
    for i in range(25):
        progress.line({**row(i), "status": "skip", "reason": "far behind"})
    assert progress.left_s() == 20.0
