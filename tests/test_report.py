"""report.md from a synthetic run: recommendation rules, pivots, noise, failures, plots, extras.

The synthetic run has exact, known times (elements x ns per element), so the
winner, the runner-up and the lead are predictable: `fastest-wrong` is the
fastest but fails verify; `fast-good` is 3x faster than `mid-good`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from harness.core.spec import Spec
from harness.report import REGIMES, build, load_run, pipeline, recommend
from harness.report.frontier import pareto, tradeoff
from harness.report.recommend import regime_of

NS_PER_ELEMENT = {"seed-numpy-stack": 10.0, "seed-torch-stack": 12.0, "mid-good": 3.0,
                  "fast-good": 1.0, "fastest-wrong": 0.5, "slow-loops": 400.0,
                  "roof-numpy-fill": 0.4, "numpy-forward": 2.0, "fused-forward": 1.0,
                  "roof-numpy-add": 0.8}
FORWARD = {"numpy-forward", "fused-forward", "roof-numpy-add"}
LONG_ERR = {"seed-numpy-stack": 2e-2, "seed-torch-stack": 2e-2, "mid-good": 3e-3, "fast-good": 1e-7,
            "slow-loops": 3e-8, "fastest-wrong": 5e-1, "numpy-forward": 2e-2, "fused-forward": 2e-7}
SIZES = [(64, 64), (1024, 64), (64, 1024), (8192, 64), (1024, 1024), (8192, 1024), (65536, 1024)]
#: A smaller run for tests that only need a few cells (reports with plots build faster).
SMALL = dict(impls=("seed-numpy-stack", "mid-good", "fast-good", "roof-numpy-fill"),
             sizes=((1024, 64), (8192, 1024)))
NOISY_CELL = ("mid-good", 1024, 64, "float32", 1)
ERROR_CELL = ("mid-good", 65536, 1024, "float64", 2)


def median_s(impl: str, length: int, d_model: int, dtype: str, threads: int) -> float:
    scale = 1.5 if dtype == "float64" else 1.0
    parallel = 1.0 if impl == "slow-loops" else {1: 1.0, 2: 1.8}[threads]
    return length * d_model * NS_PER_ELEMENT[impl] * 1e-9 * scale / parallel


def bench_rows(machine: str = "testbox", run_id: str = "run-a", impls=tuple(NS_PER_ELEMENT),
               sizes=SIZES) -> list[dict]:
    rows = []
    for impl in impls:
        workload = "forward" if impl in FORWARD else "table"
        roof = "roof-numpy-add" if workload == "forward" else "roof-numpy-fill"
        for length, d_model in sizes:
            for dtype in ("float32", "float64"):
                for threads in (1, 2):
                    t = median_s(impl, length, d_model, dtype, threads)
                    noisy = (impl, length, d_model, dtype, threads) == NOISY_CELL
                    status, reason = "ok", ""
                    if (impl, length, d_model, dtype, threads) == ERROR_CELL:
                        status, reason = "error", "MemoryError: boom"
                    elif impl == "slow-loops" and length * d_model > 2**20:
                        status, reason = "skip", "predicted 30 s > budget 5 s"
                    rows.append(dict(
                        run_id=run_id, machine=machine, impl=impl, backend="numpy", device="cpu",
                        workload=workload, length=length, d_model=d_model, dtype=dtype,
                        threads=threads, batch=2 if workload == "forward" else 0,
                        median_s=t if status == "ok" else float("nan"),
                        iqr_s=(0.3 if noisy else 0.02) * t if status == "ok" else float("nan"),
                        min_s=0.99 * t, rounds=10, first_call_s=2 * t, peak_bytes=4 * length * d_model,
                        roof_ratio=t / median_s(roof, length, d_model, dtype, threads),
                        status=status, reason=reason, is_roof=impl.startswith("roof")))
    return rows


def verify_rows() -> list[dict]:
    rows = []
    for impl, err in LONG_ERR.items():
        workload = "forward" if impl in FORWARD else "table"
        for length, d_model in ((1500, 128), (262_144, 8)):
            for dtype in ("float32", "float64"):
                spec = Spec(length, d_model, dtype=dtype)
                e = (err if length > 100_000 else err / 100) * (1e-6 if dtype == "float64" else 1)
                bad = impl == "fastest-wrong" and length > 100_000
                rows.append(dict(impl=impl, backend="numpy", device="cpu", workload=workload,
                                 **spec.as_dict(), max_abs_err=e, tol=1e-3, err_ratio=e / 1e-3,
                                 ulps=1.0, worst_pos=length - 1, worst_col=0,
                                 status="fail" if bad else "pass",
                                 grade="fail" if bad else "exact" if err < 1e-6 else "float32",
                                 reason="error 0.5 > tolerance" if bad else "", seconds=0.1))
    return rows


def write_run(root: Path, name: str = "run-a", machine: str = "testbox",
              bench: list[dict] | None = None, verify: bool = True) -> Path:
    """A run directory as the bench engine writes it, with exact synthetic numbers."""
    path = root / name
    path.mkdir(parents=True)
    pd.DataFrame(bench if bench is not None else bench_rows(machine, name)).to_csv(
        path / "bench.csv", index=False)
    env = dict(run_id=name, time_utc="2025-01-01T00:00:00Z", git_commit="abc123def456",
               git_dirty=False, python="3.11.9", platform="Linux", cpu_model="Synthetic CPU",
               cores_logical=2, cores_physical=2, memory_bytes=8 * 2**30, gpu=None,
               versions={"numpy": "2.4.0", "torch": None}, machine=machine,
               argv=["harness", "bench", "--quick"])
    (path / "env.json").write_text(json.dumps(env))
    if verify:
        pd.DataFrame(verify_rows()).to_csv(path / "verify.csv", index=False)
    (path / "raw").mkdir()
    return path


def without_plots(patch: pytest.MonkeyPatch) -> None:
    """For tests of tables and rules: skip drawing (the plots have their own test)."""
    patch.setattr(pipeline, "_start_drawing", lambda *args, **kwargs: dict)


@pytest.fixture
def no_plots(monkeypatch):
    without_plots(monkeypatch)


def section(text: str, title: str) -> str:
    """The body of one '## title' section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    """The rows of every markdown table in `text` whose first cell is `first_cell`."""
    return [cells(line) for line in text.splitlines() if line.startswith(f"| {first_cell} ")]


def keyed_rows(text: str, first_cell: str) -> list[dict[str, str]]:
    """Like `table_rows`, each row keyed by its table's header."""
    lines, header, found = text.splitlines(), [], []
    for line, following in zip(lines, lines[1:] + [""]):
        if following.startswith("|---"):
            header = cells(line)
        elif line.startswith(f"| {first_cell} "):
            found.append(dict(zip(header, cells(line))))
    return found


def test_recommendation_runner_up_and_lead_are_exact(tmp_path):
    run = load_run(write_run(tmp_path))
    picks = {(p.workload, p.regime.name, p.dtype, p.threads): p for p in recommend(run.bench, run.verify)}
    small = picks[("table", "small", "float32", 1)]
    assert (small.impl, small.runner_up) == ("fast-good", "mid-good")
    assert small.lead == pytest.approx(3.0)
    assert small.excluded and small.excluded[0].startswith("fastest-wrong: fails verify")
    assert small.accuracy.max_abs_err == pytest.approx(1e-7) and small.accuracy.position == 262_143
    # mid-good errored on the only large float64 cell at 2 threads: the seed is runner-up there.
    large = picks[("table", "large", "float64", 2)]
    assert (large.impl, large.runner_up, large.cells) == ("fast-good", "seed-numpy-stack", 1)
    assert large.lead == pytest.approx(10.0)
    assert picks[("forward", "medium", "float32", 2)].impl == "fused-forward"


def test_partial_coverage_does_not_win(tmp_path):
    """Made the fastest of all, slow-loops still ran only 2 of 3 medium sizes: not ranked there."""
    rows = bench_rows()
    for r in rows:
        if r["impl"] == "slow-loops":
            r["median_s"] /= 4000
    run = load_run(write_run(tmp_path, bench=rows))
    picks = {(p.regime.name, p.dtype, p.threads): p for p in recommend(run.bench, run.verify)
             if p.workload == "table"}
    assert picks[("small", "float32", 1)].impl == "slow-loops"
    assert picks[("medium", "float32", 1)].impl == "fast-good"


def test_implementation_absent_from_verify_is_never_recommended(tmp_path):
    rows = [r for r in verify_rows() if r["impl"] != "fast-good"]
    path = write_run(tmp_path)
    pd.DataFrame(rows).to_csv(path / "verify.csv", index=False)
    run = load_run(path)
    picks = [p for p in recommend(run.bench, run.verify) if p.workload == "table"]
    assert "fast-good" not in {p.impl for p in picks}
    assert {p.impl for p in picks if p.dtype == "float32"} == {"mid-good"}
    assert any("fast-good: not in verify.csv" in e for e in picks[0].excluded)


def test_no_verify_csv_means_no_recommendation(tmp_path, no_plots):
    run = load_run(write_run(tmp_path, bench=bench_rows(**SMALL), verify=False))
    assert recommend(run.bench, run.verify) == []
    text = build([run.path]).read_text()
    assert "no verify.csv, so nothing can be recommended" in section(text, "Recommendation")
    assert not list(run.path.glob("plots/*.png"))   # no_plots draws none: a dead patch drew all


def test_regimes_cover_sizes_without_gaps():
    assert [regime_of(n).name for n in (1, 2**16, 2**16 + 1, 2**24 - 1, 2**24, 2**30)] == \
        ["small", "small", "medium", "medium", "large", "large"]
    assert [r.name for r in REGIMES] == ["small", "medium", "large"]


def test_pareto():
    assert pareto([(1.0, 1.0), (2.0, 0.5), (3.0, 0.7), (0.5, 2.0), (1.0, 1.0)]) == \
        [True, True, False, True, True]


def test_reference_size_falls_back_to_largest_common(tmp_path):
    rows = [r for r in bench_rows() if (r["length"], r["d_model"]) != (8192, 1024)]
    run = load_run(write_run(tmp_path, bench=rows))
    trade = tradeoff(run.bench, run.verify, "table", ["seed-numpy-stack"])
    assert (trade.length, trade.d_model, trade.dtype) == (65536, 1024, "float32")


def test_only_keeps_baselines_and_roofs(tmp_path, no_plots):
    path = write_run(tmp_path, bench=bench_rows(**SMALL))
    text = build([path], only=["fast-*"]).read_text()
    body = section(text, "Workload `table`")
    assert table_rows(body, "fast-good") and table_rows(body, "seed-numpy-stack")
    assert table_rows(body, "roof-numpy-fill") and not table_rows(body, "mid-good")


def test_frontier_compares_only_errors_checked_as_far_out(tmp_path):
    """mid-good verified only to p = 1,499 cannot sit on the frontier beside p = 262,143 errors."""
    path = write_run(tmp_path)
    rows = [r for r in verify_rows() if not (r["impl"] == "mid-good" and r["length"] > 100_000)]
    pd.DataFrame(rows).to_csv(path / "verify.csv", index=False)
    run = load_run(path)
    points = {p.impl: p for p in tradeoff(run.bench, run.verify, "table", ["seed-numpy-stack"]).points
              if p.threads == 1}
    assert points["mid-good"].excluded == "verify reached only p = 1,499"
    assert not points["mid-good"].frontier and points["fast-good"].frontier
    assert points["fastest-wrong"].excluded.startswith("fails verify")


def test_timed_convention_is_shown_when_not_the_papers(tmp_path, no_plots):
    rows = bench_rows(**SMALL)
    for r in rows:
        r["convention"] = "concat" if r["impl"] == "fast-good" else "paper"
    text = build([write_run(tmp_path, bench=rows)]).read_text()
    assert "**fast-good** (timed building the concat (layout concat) table, the first convention it " \
           "supports)" in section(text, "Recommendation")
    assert table_rows(section(text, "Accuracy vs speed"), "fast-good (concat)")
    assert "seed-numpy-stack (paper)" not in text


def test_a_workload_whose_usual_choice_was_not_timed_claims_no_speedup_over_it(tmp_path, no_plots):
    rows = [r for r in bench_rows(**SMALL) if r["impl"] != "seed-numpy-stack"]
    text = build([write_run(tmp_path, bench=rows)]).read_text()
    body = section(text, "Workload `table`")
    assert "was not timed ok in this run" in body and "speedup is" not in body
    timed = section(build([write_run(tmp_path, "run-b", bench=bench_rows(**SMALL))]).read_text(),
                    "Workload `table`")
    assert "speedup is seed-numpy-stack's median" in timed


def test_a_thread_count_only_a_one_thread_implementation_was_timed_at_recommends_nothing(tmp_path):
    """At the small size only slow-loops (pure Python, 1 thread only) has a 1-thread cell: no
    1-thread pick there (the committed run recommended seed-python-loops at 1 thread, 480 ms,
    beside a 101 us pick at 2); where fast-good was timed at 1 thread too, the 1-thread group
    keeps its pick."""
    rows = [r for r in bench_rows(**SMALL) + bench_rows(impls=("slow-loops",), sizes=SMALL["sizes"])
            if r["threads"] == 2 or r["impl"] == "slow-loops" or r["length"] == 8192]
    rows = [r for r in rows if not (r["impl"] == "slow-loops" and r["threads"] == 2)]
    run = load_run(write_run(tmp_path, bench=rows))
    picks = {(p.regime.name, p.dtype, p.threads): p.impl for p in recommend(run.bench, run.verify)}
    assert ("small", "float32", 1) not in picks
    assert picks[("small", "float32", 2)] == "fast-good"
    assert picks[("medium", "float32", 1)] == "fast-good"
    # fast-good's small 2-thread cell flagged for load, timed again at 1 thread: that 1-thread
    # group shares it with the 2-thread cells (flagged ones count) and keeps its pick
    flagged = [{**r, "flags": "load: 1.9 cores busy" if (r["impl"], r["length"], r["threads"]) ==
                ("fast-good", 1024, 2) else ""} for r in rows]
    again = [{**r, "threads": 1} for r in flagged if (r["impl"], r["length"], r["threads"]) ==
             ("fast-good", 1024, 2)]
    run = load_run(write_run(tmp_path, "run-b", bench=flagged + [{**r, "flags": ""} for r in again]))
    picks = {(p.regime.name, p.dtype, p.threads): p.impl for p in recommend(run.bench, run.verify)}
    assert picks[("small", "float32", 1)] == "fast-good"
