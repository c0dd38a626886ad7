"""report.html: one self-contained page beside report.md, checked as text and in a real browser.

The browser test opens the page from disk in headless Chromium (Debian's `chromium` package,
installed by .ci/run) and reads the DOM after its script ran; it skips, saying why, where no
Chromium is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.report import build, html
from tests.test_report import write_run

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A one-run report with its plots (drawn once for the module)."""
    run = write_run(tmp_path_factory.mktemp("html"))
    build([run])
    return run


def test_the_page_is_self_contained_with_every_plot_embedded(report):
    page = (report / html.FILENAME).read_text()
    plots = sorted((report / "plots").glob("*.png"))
    assert plots
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) >= len(plots) and all(src.startswith("data:image/png;base64,")
                                             for src in images)
    assert not re.search(r'(src|href)="(https?:)?//', page)       # nothing fetched from elsewhere
    assert "<h2>Answer</h2>" in page and page.count("<section>") >= 3
    rules = re.findall(r"^\|[-:| ]+\|$", (report / "report.md").read_text(), re.M)
    assert page.count("<table>") == len(rules)                    # every table rendered


def test_sections_wrap_each_h2():
    page = html.render("# T\n\nlead\n\n## A\n\none\n\n## B\n\n| x |\n| --- |\n| 1 |\n", Path("."))
    assert page.count("<section>") == 2 and "<table>" in page
    assert page.index("lead") < page.index("<section>")


def browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def test_the_page_renders_in_a_headless_browser_without_script_errors(report, tmp_path):
    found = browser()
    if found is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium package)")
    page = report / html.FILENAME
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
    plots = len(list((report / "plots").glob("*.png")))
    assert len(re.findall(r'<img src="data:image/png;base64,', dom)) >= plots
