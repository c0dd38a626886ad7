"""Reports of bench runs: report.md with pivots, recommendations and plots, side by side, compared.

`build([run_dir])` is what the bench engine calls at the end of a sweep;
`python -m harness report` (harness.report.cli) is the same from the shell.
Modules, one concern each: load (run directories), source (bench.csv or the
journal: which rows to trust), measures (speedups, noise),
accuracy (verify verdicts), recommend, frontier (accuracy vs speed), compare
(the slowdown gate), pivots / markdown / sections / side_by_side / extras
(what the reader sees), figures / plots (PNGs), pipeline (`build`), cli.
"""

from __future__ import annotations

from harness.report.compare import Change, changes, slower
from harness.report.load import Run, load_run, newest_run
from harness.report.recommend import REGIMES, Recommendation, recommend

__all__ = ["Change", "REGIMES", "Recommendation", "Run", "build", "changes", "load_run",
           "newest_run", "recommend", "slower"]


def __getattr__(name: str):
    """`build` on first use: it imports matplotlib, which every other verb's process can skip."""
    if name == "build":
        from harness.report.pipeline import build
        return build
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
