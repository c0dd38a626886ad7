"""report.md answers "what should I use" first: the short table, the convention, the same positions.

The synthetic run of test_report has exact times (elements x ns per element), so
the gain over the usual choice is known: fast-good is 10x seed-numpy-stack, and
fused-forward 2x numpy-forward; its verify errors are known per case too.
"""

from __future__ import annotations

import pandas as pd
import pytest

from harness.cli import main
from harness.core.spec import Spec
from harness.report import build, load_run, positions
from harness.report.measures import baselines, usual
from tests.test_report import (SMALL, bench_rows, keyed_rows, no_plots, section, verify_rows,  # noqa: F401
                               without_plots, write_run)


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> str:
    """The report of write_run's run, without plots: built once, read by the tests that only read."""
    with pytest.MonkeyPatch.context() as patch:
        without_plots(patch)
        return build([write_run(tmp_path_factory.mktemp("advice"))]).read_text()


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_the_answer_comes_first_and_the_environment_last(text):
    lines = text.splitlines()
    assert headings(text)[:2] == ["## Answer", "## Recommendation"]
    assert headings(text)[-1] == "## Environment"
    table_start = next(i for i, line in enumerate(lines) if line.startswith("| workload | size |"))
    assert table_start < 10                            # on the first screen
    assert all(len(line) < 400 for line in lines[:table_start])   # no wall of text before it


def test_short_table_has_one_row_per_workload_regime_and_dtype_with_the_gain(text):
    short = section(text, "Recommendation").split("### Detail")[0]
    rows = keyed_rows(short, "`table`") + keyed_rows(short, "`forward`")
    assert len(rows) == 2 * 3 * 2                      # workloads x regimes x dtypes
    assert list(rows[0]) == ["workload", "size", "dtype", "use", "threads", "faster than usual",
                             "usual choice", "max error (vs usual's)"]
    small = next(r for r in rows if (r["workload"], r["size"], r["dtype"]) == ("`table`", "small", "float32"))
    assert (small["use"], small["faster than usual"], small["usual choice"]) == \
        ("**fast-good**", "10x", "seed-numpy-stack")
    # both errors on the same case: the farthest one both ran (262,144 rows)
    assert small["max error (vs usual's)"] == "1e-07 vs 0.02 (p <= 262,143)"
    fwd = next(r for r in rows if (r["workload"], r["size"], r["dtype"]) == ("`forward`", "large", "float64"))
    assert (fwd["use"], fwd["faster than usual"], fwd["usual choice"]) == \
        ("**fused-forward**", "2x", "numpy-forward")


def test_short_table_quotes_the_most_threads_and_the_detail_every_count(text):
    body = section(text, "Recommendation")
    assert "timed with 2 threads" not in body          # a claim the rows may contradict
    short = keyed_rows(body.split("### Detail")[0], "`table`")
    assert {r["threads"] for r in short} == {"2"}      # each row says its own
    detail = body.split("### Detail")[1]
    rows = keyed_rows(detail, "small")
    assert {r["threads"] for r in rows} == {"1", "2"}
    assert all(r["vs usual"] == "10x" for r in rows if r["use"] == "**fast-good**")


def test_the_default_convention_is_the_papers_and_said_so(text):
    body = section(text, "Recommendation")
    assert "**paper (interleaved, freq_shift 0, offset 0, sin first)** table (the default" in body
    assert "`report --convention NAME`" in body


def verified_t2t_only(path, impl: str) -> None:
    """verify.csv where `impl` builds only the t2t table (concat, freq_shift 1)."""
    rows = []
    for row in verify_rows():
        if row["impl"] == impl:
            row = {**row, "layout": "concat", "freq_shift": 1}
        rows.append(row)
    pd.DataFrame(rows).to_csv(path / "verify.csv", index=False)


def test_an_implementation_of_another_convention_is_not_recommended(tmp_path, no_plots):  # noqa: F811
    path = write_run(tmp_path, bench=bench_rows(**SMALL))
    verified_t2t_only(path, "fast-good")
    paper = section(build([path]).read_text(), "Recommendation")
    assert "**mid-good**" in paper and "**fast-good**" not in paper
    t2t = build([path], convention_name="t2t").read_text()
    body = section(t2t, "Recommendation")
    assert "**t2t (concat, freq_shift 1, offset 0, sin first)** table" in body
    assert "**fast-good**" in body and "**mid-good**" not in body


def test_convention_on_the_command_line(tmp_path, capsys, no_plots):  # noqa: F811
    path = write_run(tmp_path, bench=bench_rows(**SMALL))
    verified_t2t_only(path, "fast-good")
    assert main(["report", str(path), "--convention", "t2t"]) == 0
    assert "**fast-good**" in section((path / "report.md").read_text(), "Recommendation")
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(path), "--convention", "no-such"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown convention 'no-such'"):
        build([path], convention_name="no-such")


def test_accuracy_table_quotes_every_implementation_on_the_same_positions(tmp_path, no_plots):  # noqa: F811
    path = write_run(tmp_path)
    # mid-good was only verified on the short case: no number may stand in for the long one
    rows = [r for r in verify_rows() if not (r["impl"] == "mid-good" and r["length"] > 100_000)]
    pd.DataFrame(rows).to_csv(path / "verify.csv", index=False)
    body = section(build([path]).read_text(), "Accuracy at the same positions")
    f32 = body.split("### float32")[1].split("###")[0]
    header = [c.strip() for c in f32.strip().splitlines()[0].strip("|").split("|")]
    assert header == ["impl", "p 0..262,143 (d=8)", "p 0..1,499 (d=128)"]
    assert keyed_rows(f32, "fast-good")[0] == {"impl": "fast-good", header[1]: "1e-07",
                                               header[2]: "1e-09"}
    assert keyed_rows(f32, "mid-good")[0][header[1]] == "-"
    assert keyed_rows(f32, "mid-good")[0][header[2]] == "3e-05"
    assert keyed_rows(f32, "fastest-wrong")[0][header[1]] == "0.5 (fail)"


def test_errors_pick_one_case_per_reach_farthest_first(tmp_path):
    verify = load_run(write_run(tmp_path)).verify
    found = positions.errors(verify, "paper", "float64", ["fast-good", "seed-numpy-stack"])
    assert [c.last for c in found.cases] == [262_143, 1_499]
    assert found.farthest_shared("fast-good", "seed-numpy-stack").last == 262_143
    assert found.error("fast-good", found.cases[0]) == pytest.approx(1e-13)
    assert positions.errors(verify, "t2t", "float64", ["fast-good"]) is None


def gpu_rows() -> list[dict]:
    """A CUDA-only run: no NumPy seed, the torch seed in float32 only."""
    rows = []
    for impl, ns in (("seed-torch-cuda-stack", 8.0), ("torch-cuda-stack", 9.0), ("fast-cuda", 1.0),
                     ("roof-torch-cuda-fill", 0.5)):
        for dtype in ("float32", "float16"):
            if impl == "seed-torch-cuda-stack" and dtype == "float16":
                continue
            for length, d_model in ((1024, 64), (8192, 1024)):
                t = length * d_model * ns * 1e-9
                rows.append(dict(run_id="gpu", machine="gpubox", impl=impl, backend="torch",
                                 device="cuda", workload="table", length=length, d_model=d_model,
                                 dtype=dtype, threads=1, batch=0, median_s=t, iqr_s=0.01 * t,
                                 first_call_s=2 * t, roof_ratio=ns / 0.5, status="ok", reason="",
                                 is_roof=impl.startswith("roof"), mode="sync"))
    return rows


def gpu_verify() -> list[dict]:
    return [dict(impl=impl, backend="torch", device="cuda", workload="table",
                 **Spec(1500, 128, dtype=dtype).as_dict(), max_abs_err=1e-6, tol=1e-3,
                 err_ratio=1e-3, ulps=1.0, worst_pos=1, worst_col=0, status="pass", reason="",
                 seconds=0.1)
            for impl in ("seed-torch-cuda-stack", "torch-cuda-stack", "fast-cuda")
            for dtype in ("float32", "float16")]


def test_the_usual_choice_is_the_devices_own(tmp_path, no_plots):  # noqa: F811
    path = write_run(tmp_path, bench=gpu_rows(), verify=False)
    pd.DataFrame(gpu_verify()).to_csv(path / "verify.csv", index=False)
    run = load_run(path)
    assert usual(run.bench, "table", "cuda", "float32", "seed-numpy-stack") == "seed-torch-cuda-stack"
    assert usual(run.bench, "table", "cuda", "float16", "seed-numpy-stack") == "torch-cuda-stack"
    assert baselines(run.bench, "seed-numpy-stack") == {"table": "seed-torch-cuda-stack"}
    text = build([path]).read_text()
    short = section(text, "Recommendation").split("### Detail")[0]
    rows = {r["dtype"]: r for r in keyed_rows(short, "medium")}
    assert {r["use"] for r in rows.values()} == {"**fast-cuda**"}
    assert (rows["float32"]["faster than usual"], rows["float32"]["usual choice"]) == \
        ("8x", "seed-torch-cuda-stack")
    assert (rows["float16"]["faster than usual"], rows["float16"]["usual choice"]) == \
        ("9x", "torch-cuda-stack")
    # the detail pivots quote the device's seed too, not a '-' for a NumPy seed never timed,
    # and no all-'-' table where the seed did not run (float16)
    pivots = section(text, "Workload `table`")
    assert "**Speedup vs seed-torch-cuda-stack**" in pivots.split("### float32")[1]
    assert "**Speedup vs" not in pivots.split("### float16")[1].split("###")[0]


def test_the_answer_block_and_answer_txt_say_the_same_with_true_threads_and_grades(tmp_path, no_plots):  # noqa: F811
    run = write_run(tmp_path)
    graded = pd.read_csv(run / "verify.csv")
    graded["grade"] = "exact"
    graded.loc[graded["impl"] == "fast-good", "grade"] = "float32"
    graded.to_csv(run / "verify.csv", index=False)
    text = build([run]).read_text()
    rows = keyed_rows(section(text, "Answer"), "`table`")
    small = next(r for r in rows if r["size"] == "small")
    assert (small["use"], small["threads"], small["grade"]) == ("**fast-good**", "2", "float32")
    assert small["faster than the usual choice"] == "10x"
    lines = (run / "answer.txt").read_text().splitlines()
    table = next(line for line in lines if line.startswith("table (float32): "))
    assert "small fast-good (2 threads, float32, 10x vs seed-numpy-stack)" in table


def test_each_pick_shows_its_grade_and_a_faster_float32_pick_names_the_exact_one(tmp_path, no_plots):  # noqa: F811
    """mid-good (float32 angles) is faster than slow-loops (exact): the detail says both, and one
    sentence says the pick is only float32-grade and what exactness costs."""
    impls = ("seed-numpy-stack", "mid-good", "slow-loops", "roof-numpy-fill")
    run = write_run(tmp_path, bench=bench_rows(impls=impls, sizes=((1024, 64),)))
    text = section(build([run]).read_text(), "Recommendation")
    detail = [r for r in keyed_rows(text, "small") if "grade" in r]      # the detail table
    assert detail and all(r["use"] == "**mid-good**" and r["grade"] == "float32" for r in detail)
    assert all(r["exact instead"].startswith("slow-loops (") for r in detail)
    assert "Only `float32`-grade" in text and "where slow-loops is exact at" in text


def test_the_first_screen_is_the_answer_then_links_to_every_section(text):
    lines = text.splitlines()
    below = next(i for i, line in enumerate(lines) if line.startswith("**Below:**"))
    assert below < 40                                  # title, answer, its legend, then links
    heads = [line[3:] for line in lines if line.startswith("## ")][1:]   # after the Answer
    from harness.report.summary import anchor
    for head in heads:
        assert f"(#{anchor(head)})" in lines[below]
    assert anchor("Accuracy at the same positions") == "accuracy-at-the-same-positions"
    assert "[report.html](report.html)" in text


def test_a_kind_timed_only_in_another_convention_is_read_in_that_one():
    """The GPU campaign times the apply as `gqa8-bshd` only (its skips say `neox`): the report
    must read those rows, not find nothing to recommend."""
    import pandas as pd

    from harness.report import convention

    rows = pd.DataFrame({
        "kind": ["rotary"] * 3 + ["table"], "impl": ["a", "b", "c", "t"],
        "convention": ["gqa8-bshd", "gqa8-bshd", "neox", "paper"],
        "status": ["ok", "ok", "skip", "ok"], "dtype": "float32", "is_roof": False})
    kept = convention.within(rows, None, "paper")
    assert set(kept["impl"]) == {"a", "b", "t"}
    both = rows.assign(status="ok")          # where the first convention was timed, it is read
    assert set(convention.within(both, None, "paper")["impl"]) == {"c", "t"}


def test_a_usual_choice_not_timed_at_a_size_is_named_not_mistaken_for_none():
    """Under load the usual choice's cell can stay flagged at a size the pick was timed at: the
    line names it as not timed there, never 'no usual choice' beside its name."""
    from harness.report import summary
    from harness.report.answer import Answer
    from harness.report.recommend import Recommendation, Regime

    pick = Recommendation("apply", Regime("small", 0, 1e5, "small"), "float32", "cpu", 1,
                          "rotary-numba-apply-inplace", "half", 1e-5, 1, None)
    line = summary.lines([Answer(pick, "rotary-torch-apply-unfused", float("nan"), 0)], None)[0]
    assert "rotary-torch-apply-unfused (the usual choice) not timed here" in line
    assert " vs rotary-torch-apply-unfused" not in line and "no usual choice" not in line


def test_the_answer_takes_the_faster_pick_of_a_group_not_the_one_at_more_threads():
    """Under load the 2-thread group kept one clean cell, 5x slower than the usual choice; the
    1-thread pick was faster: the answer is the faster one, at its true thread count."""
    from harness.report.answer import _better
    from harness.report.recommend import Recommendation, Regime

    small = Regime("small", 0, 1e5, "small")
    two = Recommendation("forward", small, "float32", "cpu", 2, "lone-survivor", "paper", 5e-4, 1, None)
    one = Recommendation("forward", small, "float32", "cpu", 1, "fast", "paper", 1e-4, 3, None)
    assert _better(one, two) and not _better(two, one)
    tie = Recommendation("forward", small, "float32", "cpu", 2, "fast", "paper", 1e-4, 3, None)
    assert _better(tie, one)                             # as fast: the one at more threads
