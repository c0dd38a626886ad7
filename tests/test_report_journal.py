"""`report` on an interrupted or damaged run: the journal (cells.jsonl) is the truth.

Issue 10, item 3: after a kill bench.csv held 1-2 rows while the journal held
32 and the report drew from the one row; a header-only bench.csv replaced
report.md with an empty report; a truncated one raised `KeyError: nan`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.cli
import harness.report.cli
from harness.report import build, load_run, newest_run
from harness.runs import journal, results
from tests.test_report import SMALL, bench_rows, no_plots, section, write_run  # noqa: F401

GOOD_REPORT = "# a good report from before\n"
#: bench.csv columns the engine derives when it writes the file (a journal row lacks them).
DERIVED = ("run_id", "machine", "gbps", "roof_s", "roof_ratio")


@pytest.fixture(autouse=True)
def only_the_report_verb(monkeypatch, no_plots):
    """`python -m harness report` alone, without plots: these tests are about which rows count."""
    monkeypatch.setattr(harness.cli, "_verb_modules", lambda: {"report": harness.report.cli})


def logged(row: dict) -> dict:
    """A synthetic bench row as the engine journals it: with its key and bytes, without the
    columns bench.csv derives."""
    batch = f"-b{row['batch']}" if row["workload"] == "forward" else ""
    key = (f"{row['impl']}:{row['workload']}:{row['device']}:{row['length']}x{row['d_model']}"
           f"{batch}:{row['dtype']}:{row['threads']}t")
    every = {c: "" for c in results.COLUMNS if c not in DERIVED}
    return {**every, "key": key, "bytes_out": 4 * row["length"] * row["d_model"],
            **{k: v for k, v in row.items() if k not in DERIVED}}


def interrupted_run(root: Path, csv_rows: int | None) -> tuple[Path, list[dict]]:
    """A run whose journal holds every cell and whose bench.csv, written by the engine's own
    code, holds the first `csv_rows` of them (None: no bench.csv at all)."""
    rows = [logged(r) for r in bench_rows(run_id="run-a", **SMALL)]
    run = write_run(root, "run-a", bench=bench_rows(**SMALL))
    (run / "bench.csv").unlink()
    for row in rows:
        journal.append(run / journal.FILENAME, row)
    if csv_rows is not None:
        results.write(run, rows[:csv_rows], "run-a", "testbox")
    (run / "report.md").write_text(GOOD_REPORT)
    return run, rows


def report(argv: list[str]) -> int:
    return harness.cli.main(["report", *argv])


def test_stale_bench_csv_is_rebuilt_from_the_journal(tmp_path, capsys):
    run, rows = interrupted_run(tmp_path, csv_rows=1)
    loaded = load_run(run)
    assert len(loaded.bench) == len(rows)
    assert "stale: 1 cell where cells.jsonl has" in loaded.note
    assert report([str(run)]) == 0
    assert "warning:" in capsys.readouterr().err
    text = (run / "report.md").read_text()
    assert "Timings rebuilt from the journal" in text
    recommended = section(text, "Recommendation")
    assert "**fast-good**" in recommended   # not the one row bench.csv held (seed-numpy-stack)


def test_header_only_bench_csv_is_rebuilt_from_the_journal(tmp_path):
    run, rows = interrupted_run(tmp_path, csv_rows=0)
    assert len(load_run(run).bench) == len(rows)
    assert "header only" in load_run(run).note


def test_journal_without_bench_csv_is_a_run(tmp_path):
    run, rows = interrupted_run(tmp_path, csv_rows=None)
    assert len(load_run(run).bench) == len(rows)
    assert newest_run(tmp_path) == run


def test_a_cell_run_again_after_the_csv_was_written_is_taken_from_the_journal(tmp_path):
    run, rows = interrupted_run(tmp_path, csv_rows=len(bench_rows(**SMALL)))
    assert load_run(run).note == ""
    again = {**rows[0], "median_s": rows[0]["median_s"] / 2}    # measured again (flagged)
    journal.append(run / journal.FILENAME, again)
    loaded = load_run(run)
    assert "1 cell recorded differently" in loaded.note
    assert rows[0]["median_s"] / 2 in loaded.bench["median_s"].tolist()
    failed = {**rows[0], "status": "error", "reason": "worker died", "median_s": float("nan")}
    journal.append(run / journal.FILENAME, failed)          # a retry that failed keeps the timing
    assert load_run(run).bench["status"].tolist().count("error") == 0


def test_bench_csv_agreeing_with_the_journal_is_used_as_it_is(tmp_path):
    run, rows = interrupted_run(tmp_path, csv_rows=len(bench_rows(**SMALL)))
    loaded = load_run(run)
    assert loaded.note == "" and len(loaded.bench) == len(rows)


def test_bench_csv_with_cells_the_journal_lacks_is_refused(tmp_path, capsys):
    run, rows = interrupted_run(tmp_path, csv_rows=len(bench_rows(**SMALL)))
    (run / journal.FILENAME).write_text("")
    for row in rows[1:]:
        journal.append(run / journal.FILENAME, row)
    assert report([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bench.csv has 1 cell that" in err and "cells.jsonl" in err
    assert (run / "report.md").read_text() == GOOD_REPORT


def cut(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@pytest.mark.parametrize("damage, message", [
    (lambda p: cut(p, p.read_bytes().index(b"\n") + 1), "header only, no rows"),
    (lambda p: cut(p, p.read_bytes().index(b"\n") + 40), "line 2, the last, is cut off"),
    (lambda p: cut(p, len(p.read_bytes()) - 30), "is cut off (truncated file?)"),
    (lambda p: p.write_bytes(b""), "empty file"),
    (lambda p: p.write_bytes(bytes(range(256)) * 8), "not a text CSV"),
])
def test_damaged_bench_csv_without_a_journal_is_refused_and_report_md_kept(
        tmp_path, capsys, damage, message):
    run = write_run(tmp_path, "run-a", bench=bench_rows(**SMALL))
    (run / "report.md").write_text(GOOD_REPORT)
    damage(run / "bench.csv")
    assert report([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run / 'bench.csv'}: ") and message in err
    assert err.count("\n") == 1 and "KeyError" not in err
    assert (run / "report.md").read_text() == GOOD_REPORT


def test_truncated_bench_csv_with_a_journal_is_rebuilt(tmp_path):
    run, rows = interrupted_run(tmp_path, csv_rows=len(bench_rows(**SMALL)))
    cut(run / "bench.csv", len((run / "bench.csv").read_bytes()) - 30)
    loaded = load_run(run)
    assert len(loaded.bench) == len(rows) and "cut off" in loaded.note
    assert build([run]).read_text() != GOOD_REPORT
