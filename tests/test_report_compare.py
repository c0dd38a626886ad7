"""`report` over several runs, `--compare` and the `--fail-slower` gate, and bad input."""

from __future__ import annotations

import os

import pandas as pd
import pytest

import harness.cli
import harness.report.cli
from harness.report import build, changes, load_run, slower
from tests.test_report import SMALL, bench_rows, no_plots, section, table_rows, write_run  # noqa: F401

CELL = dict(impl="fast-good", length=8192, d_model=1024, dtype="float32", threads=1)
#: The gate's synthetic runs: every implementation of test_report at SMALL's two sizes, so each
#: group (thread count and size regime) has enough other cells to measure the noise between
#: the runs (harness.report.noise.MIN_CELLS).
GATE = dict(sizes=SMALL["sizes"])


@pytest.fixture(autouse=True)
def only_the_report_verb(monkeypatch, no_plots):
    """`python -m harness` with only this verb (other verbs in progress cannot break these
    tests), and no plots: these tests are about tables and exit codes."""
    monkeypatch.setattr(harness.cli, "_verb_modules", lambda: {"report": harness.report.cli})


def main(argv: list[str]) -> int:
    return harness.cli.main(argv)


def changed(factor: float, iqr_fraction: float = 0.02, grid: dict = SMALL) -> list[dict]:
    """The synthetic rows with CELL `factor` times slower and its IQR set; in the gate's grid,
    CELL's implementation, dtype and thread count at both sizes: a slowdown of the code moves
    its cells together (one cell alone is a lone rise: tests/test_gate_noise.py)."""
    rows = bench_rows(run_id="run-new", **grid)
    every_size = ("length", "d_model") if grid is GATE else ()
    for row in rows:
        if all(row[k] == v for k, v in CELL.items() if k not in every_size):
            row["median_s"] *= factor
            row["iqr_s"] = iqr_fraction * row["median_s"]
    return rows


def gate(tmp_path, factor: float, iqr_fraction: float = 0.02, pct: str = "20") -> int:
    base = write_run(tmp_path, "run-base", bench=bench_rows(**GATE))
    new = write_run(tmp_path, "run-new", bench=changed(factor, iqr_fraction, GATE))
    return main(["report", str(new), "--compare", str(base), "--fail-slower", pct])


def test_half_again_slower_with_tight_iqrs_fails_the_gate(tmp_path, capsys):
    assert gate(tmp_path, 1.5) == 1
    out = capsys.readouterr().out
    offending = [line for line in out.splitlines() if line.startswith("SLOWER")]
    assert len(offending) == 2 and all("+50%" in line for line in offending)
    assert "fast-good 8192x1024 float32 1 thread" in offending[0] + offending[1]


def test_cell_that_stopped_working_fails_the_gate(tmp_path, capsys):
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    rows = bench_rows(run_id="run-new", **SMALL)
    for row in rows:
        if all(row[k] == v for k, v in CELL.items()):
            row.update(status="timeout", reason="killed after 120 s", median_s=float("nan"))
    new = write_run(tmp_path, "run-new", bench=rows)
    assert main(["report", str(new), "--compare", str(base), "--fail-slower", "20"]) == 1
    broken = [line for line in capsys.readouterr().out.splitlines() if line.startswith("BROKEN")]
    assert len(broken) == 1 and "ok -> timeout" in broken[0] and "fast-good" in broken[0]


def test_a_cell_the_new_run_skipped_as_far_behind_is_not_broken(tmp_path, capsys):
    """Pruning depends on what a run measured at smaller sizes: under load two runs of the same
    code skipped different cells, and the gate failed 8 of them as broken."""
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    rows = bench_rows(run_id="run-new", **SMALL)
    for row in rows:
        if all(row[k] == v for k, v in CELL.items()):
            row.update(status="skip", reason="far behind: 8x the fastest at 64x64",
                       median_s=float("nan"))
    new = write_run(tmp_path, "run-new", bench=rows)
    assert main(["report", str(new), "--compare", str(base), "--fail-slower", "20"]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("BROKEN")]


def test_runs_sharing_no_cell_cannot_pass_the_gate(tmp_path, capsys):
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    rows = bench_rows(run_id="run-new", **SMALL)
    for row in rows:
        row["impl"] = "renamed-" + row["impl"]
    new = write_run(tmp_path, "run-new", bench=rows)
    assert main(["report", str(new), "--compare", str(base), "--fail-slower", "20"]) == 2
    assert "share no cell" in capsys.readouterr().err


def test_slowdown_within_a_huge_spread_passes(tmp_path):
    assert gate(tmp_path, 1.5, iqr_fraction=1.0) == 0


def test_speedup_passes(tmp_path, capsys):
    assert gate(tmp_path, 0.5) == 0
    assert "none slower" in capsys.readouterr().out


def test_slowdown_below_the_percentage_passes(tmp_path):
    assert gate(tmp_path, 1.5, pct="60") == 0


def test_gate_rule_is_max_of_percentage_and_spread(tmp_path):
    base = load_run(write_run(tmp_path, "run-base", bench=bench_rows(**GATE))).bench
    new = load_run(write_run(tmp_path, "run-new", bench=changed(1.3, 0.1, GATE))).bench
    cells = changes(new, base)
    assert len(cells) == len(base[base["ok"] & ~base["is_roof"]])
    # +30%, spread 0.02 * base + 0.1 * 1.3 * base = 15% of base: 20% gate fails, 35% passes.
    assert {c.impl for c in slower(cells, 20)} == {"fast-good"}
    assert slower(cells, 35) == []
    with pytest.raises(ValueError, match="> 0"):
        slower(cells, 0)


def test_compare_section_shows_per_cell_change(tmp_path):
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    new = write_run(tmp_path, "run-new", bench=changed(1.5))
    text = build([new], compare=base).read_text()
    body = section(text, "Change vs testbox (run-base)")
    f32_t1 = body.split("### `table`, float32, 1 thread")[1].split("###")[0]
    row = table_rows(f32_t1, "fast-good")[0]
    # six cells: too few to measure the noise between the runs, so none is judged (a dagger);
    # bold where the gate's bar is beaten: tests/test_gate_noise.py
    assert row == ["fast-good", "+0% †", "+50% †"]
    assert "in both runs, 0 judged" in body


def test_several_runs_side_by_side_keyed_by_machine(tmp_path):
    a = write_run(tmp_path, "run-a", machine="laptop", bench=bench_rows(**SMALL))
    b = write_run(tmp_path, "run-b", machine="ci-runner", bench=changed(2.0))
    out = tmp_path / "both"
    path = build([a, b], out)
    text = path.read_text()
    assert path == out / "report.md"
    runs = section(text, "Runs")
    assert "laptop (run-a)" in runs and "ci-runner (run-b)" in runs
    recommendation = section(text, "Recommendation")
    assert table_rows(recommendation, "table")[0][-2:] == ["fast-good (3x lead)"] * 2
    body = section(text, "Workload `table`")
    row = [r for r in table_rows(body.split("### float32, 1 thread")[1], "fast-good")
           if r[1] == "8192x1024"][0]
    assert row[2:] == ["8.39 ms (10x)", "16.8 ms (5x)"]


def test_cli_several_dirs_write_to_out_and_no_dir_takes_the_newest(tmp_path, capsys):
    a = write_run(tmp_path, "run-a", bench=bench_rows(**SMALL))
    b = write_run(tmp_path, "run-b", bench=bench_rows(**SMALL))
    os.utime(a / "bench.csv", (1e9, 1e9))  # a is the older run
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "side")]) == 0
    assert (tmp_path / "side" / "report.md").is_file()
    assert main(["report", "--out", str(tmp_path)]) == 0
    assert (b / "report.md").is_file() and not (a / "report.md").exists()
    assert str(b / "report.md") in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["{tmp}/nowhere"], "does not exist"),
    (["{tmp}/empty"], "no bench.csv"),
    (["{tmp}/run-a", "--fail-slower", "10"], "needs --compare"),
    (["{tmp}/run-a", "--compare", "{tmp}/run-a", "--fail-slower", "0"], "> 0"),
    (["{tmp}/run-a", "--compare", "{tmp}/nowhere"], "does not exist"),
    (["--out", "{tmp}/empty"], "no run directory"),
    (["{tmp}/broken"], "lacks column"),
])
def test_bad_input_is_one_clear_error(tmp_path, capsys, argv, message):
    write_run(tmp_path, "run-a", bench=bench_rows(**SMALL))
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    pd.DataFrame({"impl": ["x"], "median_s": [1.0]}).to_csv(tmp_path / "broken" / "bench.csv")
    assert main(["report", *(a.format(tmp=tmp_path) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_build_needs_dirs_and_an_out_for_several(tmp_path):
    with pytest.raises(ValueError, match="no run directory"):
        build([])
    a, b = write_run(tmp_path, "run-a"), write_run(tmp_path, "run-b")
    with pytest.raises(ValueError, match="output directory"):
        build([a, b])


def test_one_run_is_reported_in_place_or_in_an_explicit_out(tmp_path, capsys):
    run = write_run(tmp_path, "run-one", bench=bench_rows(**SMALL))
    assert main(["report", str(run)]) == 0
    assert (run / "report.md").is_file()
    elsewhere = tmp_path / "elsewhere"
    assert main(["report", str(run), "--out", str(elsewhere)]) == 0
    assert (elsewhere / "report.md").is_file()
    assert f"wrote {elsewhere / 'report.md'}" in capsys.readouterr().out


def test_compare_says_how_many_cells_it_compared(tmp_path, capsys):
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    new = write_run(tmp_path, "run-new", bench=changed(1.0))
    assert main(["report", str(new), "--compare", str(base)]) == 0
    cells = len([r for r in bench_rows(**SMALL) if not r["is_roof"]])
    assert f"compared {cells} cell(s)" in capsys.readouterr().out


def test_runs_sharing_too_few_cells_fail_with_and_without_the_gate(tmp_path, capsys):
    """A killed run (2 cells) against a full base: a verdict over 2 cells is no verdict."""
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    new = write_run(tmp_path, "run-new", bench=changed(1.0)[:2])
    for gate_args in ([], ["--fail-slower", "20"]):
        assert main(["report", str(new), "--compare", str(base), *gate_args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --compare:") and "share too few cells: 2 of 2" in err
        assert not (new / "report.md").exists()
    assert main(["report", str(new), "--compare", str(base), "--min-shared", "0"]) == 0
    assert "compared 2 cell(s)" in capsys.readouterr().out


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_text(p.read_text().splitlines()[0] + "\n"), "header only"),
    (lambda p: p.write_bytes(p.read_bytes()[:-25]), "cut off"),
    (lambda p: p.unlink(), "has no bench.csv"),
])
def test_unreadable_base_fails_the_comparison(tmp_path, capsys, damage, message):
    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    new = write_run(tmp_path, "run-new", bench=changed(1.0))
    damage(base / "bench.csv")
    assert main(["report", str(new), "--compare", str(base), "--fail-slower", "20"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and str(base) in err
    assert err.count("\n") == 1


def test_runs_with_different_heads_are_not_paired(tmp_path, capsys):
    """A rotary apply over 8 heads writes twice the bytes of one over 4: not the same cell."""
    def rows(heads: int, factor: float) -> list[dict]:
        out = bench_rows(run_id=f"run-h{heads}", **SMALL)
        for row in out:
            row.update(heads=heads, median_s=row["median_s"] * factor)
        return out

    base = write_run(tmp_path, "run-base", bench=rows(4, 1.0))
    new = write_run(tmp_path, "run-new", bench=rows(8, 2.0))
    assert changes(load_run(new).bench, load_run(base).bench) == []
    assert main(["report", str(new), "--compare", str(base), "--fail-slower", "20"]) == 2
    assert "share no cell" in capsys.readouterr().err
