"""One report drawn as `report` and `bench` draw it, read by every test that needs its plots: its
sections, its PNGs, report.html (as text and in a real browser) and the drawn text of every plot.

Drawing a report with every plot takes seconds of Agg layout; three modules drew one each, so it
is drawn once here, in this process, with each figure kept open after its PNG is written (the
overlap test reads the labels' rendered extents). The browser test opens report.html from disk in
headless Chromium (Debian's `chromium` package, installed by .ci/run); it skips, saying why, where
no Chromium is installed.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from harness.report import build, html, pipeline, plots
from tests.test_report import keyed_rows, section, table_rows, write_run

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
#: A report drawn whole, every plot, and opened in a browser: end to end, in `nox -s e2e` (which
#: CI runs), not in `nox -s tests` (23 CPU-s of its 5 minutes); the plot functions themselves are
#: tested there (tests/test_report_plots.py).
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Iterator[tuple[Path, str, list[plt.Figure]]]:
    """(run directory, report.md, every figure drawn for it, still open)."""
    figures: list[plt.Figure] = []
    save = plots.save

    def keep(fig: plt.Figure, path: Path) -> Path:
        written = save(fig, path)     # as always: laid out, written, let go by pyplot
        FigureCanvasAgg(fig)          # a canvas again, to read its text back as drawn
        figures.append(fig)
        return written

    run = write_run(tmp_path_factory.mktemp("report"))
    (run / "conventions.md").write_text("# Conventions\n\n## Classes\n\n| a | b |\n|---|---|\n| x | y |\n"
                                        "\n```\n# not a heading\n```\n")
    (run / "plots").mkdir()
    (run / "plots" / "precision.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "save", keep)
        patch.setattr(pipeline, "_fork_is_safe", lambda: False)    # drawn here, so kept here
        text = build([run]).read_text()
    yield run, text, figures
    for fig in figures:
        plt.close(fig)


@pytest.fixture
def report(drawn) -> tuple[Path, str]:
    return drawn[0], drawn[1]


def test_report_is_written_in_the_run_directory_with_every_section(report):
    run, text = report
    assert (run / "report.md").is_file()
    for title in ("Environment", "Recommendation", "Accuracy vs speed", "Workload `table`",
                  "Workload `forward`", "Noisy cells", "Failures, timeouts and skips",
                  "Convention matrix", "Precision", "Files"):
        section(text, title)
    assert "testbox" in text.splitlines()[0]
    assert "Synthetic CPU" in section(text, "Environment")


def test_recommendation_skips_the_fastest_when_it_fails_verify(report):
    _, text = report
    body = section(text, "Recommendation")
    assert "fastest-wrong" in body  # named as excluded ...
    detail = body.split("### Detail")[1]
    rows = [r for size in ("small", "medium", "large") for r in keyed_rows(detail, size)]
    assert rows and all("fastest-wrong" not in r["use"] for r in rows)  # ... never recommended
    table_picks = [r for r in rows if r["use"] == "**fast-good**"]
    assert len(table_picks) == 3 * 2 * 2  # regimes x dtypes x threads, table workload


def test_pivot_has_human_units_speedups_and_noisy_mark(report):
    _, text = report
    body = section(text, "Workload `table`")
    f32_t1 = body.split("### float32, 1 thread")[1].split("###")[0]
    medians, speedups = f32_t1.split("**Speedup vs seed-numpy-stack**")
    mid = keyed_rows(medians, "mid-good")[0]
    assert mid["1024x64"] == "197 µs*"  # 1024 * 64 * 3 ns, noisy
    assert mid["8192x1024"] == "25.2 ms"
    assert keyed_rows(speedups, "fast-good")[0]["64x64"] == "10x"
    assert keyed_rows(speedups, "seed-numpy-stack")[0]["64x64"] == "1x"
    assert keyed_rows(speedups, "slow-loops")[0]["8192x1024"] == "skip"
    assert "MemoryError: boom" in section(text, "Failures, timeouts and skips")
    noisy = section(text, "Noisy cells")
    assert "mid-good" in noisy and "1024x64 float32 1 thread" in noisy and "30%" in noisy


def test_accuracy_vs_speed_uses_reference_size_and_marks_frontier(report):
    _, text = report
    body = section(text, "Accuracy vs speed")
    assert "`table` at 8192x1024 float32" in body
    rows = {r[0]: r for r in table_rows(body, "fast-good") + table_rows(body, "slow-loops")
            + table_rows(body, "fastest-wrong") + table_rows(body, "mid-good")}
    assert rows["fast-good"][-1] == "**yes**"
    assert rows["mid-good"][-1] == ""  # dominated: slower and less accurate than fast-good
    assert rows["fastest-wrong"][-1].startswith("fails verify")
    assert "vs seed-torch-stack" in body and "12x" in rows["fast-good"][5]


def test_plots_exist_are_pngs_and_are_linked(report):
    run, text = report
    for name in ("time-table", "speedup-table", "roof-table", "threads-table", "frontier-table",
                 "time-forward", "error-float32"):
        png = run / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size > 10_000
        assert f"](plots/{name}.png)" in text


def test_extras_are_embedded_and_linked(report):
    _, text = report
    conventions = section(text, "Convention matrix")
    assert "### Classes" in conventions and "| x | y |" in conventions
    assert "# Conventions" not in conventions and "\n# not a heading" in conventions
    assert "](plots/precision.png)" in section(text, "Precision")
    assert "[raw/](raw)" in section(text, "Files")



# -- the plots, as drawn ----------------------------------------------------------------

def test_no_two_labels_of_any_plot_overlap(drawn):
    """Every plot of the report, read back through the renderer as written: the tick labels of
    one axis never overlap each other (a smear of tick labels was the complaint), nor the
    axes' title."""
    caught = drawn[2]
    assert len(caught) >= 7
    for fig in caught:
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
                texts = [t for t in (*ticks, ax.title) if t.get_visible() and t.get_text().strip()]
                boxes = [t.get_window_extent(renderer) for t in texts]
                for (a, ta), (b, tb) in itertools.combinations(zip(boxes, texts), 2):
                    assert not a.overlaps(b), (fig.texts[0].get_text() if fig.texts else "",
                                               ta.get_text(), tb.get_text())


# -- report.html ----------------------------------------------------------------------

def test_sections_wrap_each_h2():
    page = html.render("# T\n\nlead\n\n## A\n\none\n\n## B\n\n| x |\n| --- |\n| 1 |\n", Path("."))
    assert page.count("<section>") == 2 and "<table>" in page
    assert page.index("lead") < page.index("<section>")


def browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def test_the_page_is_self_contained_with_every_plot_embedded(report):
    run, _ = report
    page = (run / html.FILENAME).read_text()
    pngs = sorted((run / "plots").glob("*.png"))
    assert pngs
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) >= len(pngs) and all(src.startswith("data:image/png;base64,")
                                             for src in images)
    assert not re.search(r'(src|href)="(https?:)?//', page)       # nothing fetched from elsewhere
    assert "<h2>Answer</h2>" in page and page.count("<section>") >= 3
    rules = re.findall(r"^\|[-:| ]+\|$", (run / "report.md").read_text(), re.M)
    assert page.count("<table>") == len(rules)                    # every table rendered


def test_the_page_renders_in_a_headless_browser_without_script_errors(report, tmp_path):
    run, _ = report
    found = browser()
    if found is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium package)")
    page = run / html.FILENAME
    dom = subprocess.run(
        [found, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    root = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-ready="1"' in root, dom[:500]                      # the script ran to its end
    assert "data-js-errors" not in root                             # and raised nothing
    assert "<h2>Answer</h2>" in dom and "fast-good" in dom
    pngs = len(list((run / "plots").glob("*.png")))
    assert len(re.findall(r'<img src="data:image/png;base64,', dom)) >= pngs
