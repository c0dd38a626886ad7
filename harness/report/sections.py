"""The sections of a one-run report.md, each a function from report data to markdown.

The data (recommendations, trade-offs, changes) is computed elsewhere; these
functions only decide what a reader sees and in which words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

import pandas as pd

from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.report import fmt, markdown, pivots
from harness.report.compare import Change, as_frame, decide
from harness.report.frontier import REFERENCE, Tradeoff
from harness.report.load import Run
from harness.report.measures import groups, speedup, spread, timed
from harness.util import units

MAX_LISTED = 40
#: What every roof ratio divides by (harness/bench/roofs.py).
ROOF = ("the fastest bare fill of the same bytes (for `forward`: bare `x + y`), into fresh or "
        "into recycled memory")


def commit(env: Mapping) -> str:
    """The git commit of a run, '(dirty)' when it had uncommitted changes."""
    sha = env.get("git_commit") or "unknown (not a git checkout)"
    return str(sha) + (" (dirty)" if env.get("git_dirty") else "")


def sources(runs: Sequence[Run]) -> str:
    """A warning for each run whose timings came from its journal, not its bench.csv."""
    notes = [f"- {run.note}" for run in runs if run.note]
    if not notes:
        return ""
    return markdown.join("**Timings rebuilt from the journal** (the run was interrupted, or "
                         "bench.csv was damaged):", "\n".join(notes))


def environment(run: Run) -> str:
    """The machine and software the numbers belong to (last: a reader needs it to rerun, not to
    choose)."""
    env = run.env
    head = markdown.heading(2, "Environment")
    if not env:
        return markdown.join(head, "No env.json in this run.")
    rows = [("machine", run.machine), ("run id", run.run_id), ("time (UTC)", env.get("time_utc", "-")),
            ("git commit", commit(env)),
            ("python", env.get("python", "-")), ("platform", env.get("platform", "-")),
            ("CPU", f"{env.get('cpu_model', '-')}, {env.get('cores_logical', '?')} logical / "
                    f"{env.get('cores_physical', '?')} physical cores"
                    + (f", {env['cpus_usable']} usable by the run" if "cpus_usable" in env else "")),
            ("memory", f"{env['memory_bytes'] / 2**30:.1f} GiB" if env.get("memory_bytes") else "-"),
            ("GPU", env.get("gpu") or "none")]
    rows += [(name, version or "not installed") for name, version in env.get("versions", {}).items()]
    rows.append(("command", " ".join(env.get("argv", [])) or "-"))
    frame = pd.DataFrame(rows, columns=["", "value"])
    return markdown.join(head, "Times are medians of pytest-benchmark rounds in one process per "
                         "backend; compare ratios within this run, not absolute times across runs.",
                         markdown.table(frame, index=False))


def accuracy_vs_speed(trades: Sequence[Tradeoff], figures: Mapping[str, Path], out: Path,
                      convention: str = "") -> str:
    """Per implementation: error far out against time at one size, and the Pareto frontier."""
    within = (f" Implementations that build the {convention} table only; a convention in "
              "parentheses is the one timed when it is another.") if convention else ""
    blocks = [markdown.heading(2, "Accuracy vs speed"), (
        f"Each implementation's worst float32 error over the verify cases reaching "
        f"{fmt.count(LONG_POSITIONS)} positions (else its farthest case) against its median time "
        f"at the reference size ({REFERENCE[0]}x{REFERENCE[1]} float32 when timed, else the "
        "largest size at which at least half of the implementations ran). *Pareto*: no other "
        "correct implementation, checked as far out, is both as fast and as accurate. Speedups "
        f"are medians of the same run; *x roof* is time over {ROOF}.{within}")]
    for trade in trades:
        rows = [{"impl": p.impl + _convention(p.convention), "threads": p.threads,
                 "median": units.seconds(p.median_s),
                 "x roof": fmt.ratio(p.roof_ratio),
                 **{f"vs {name}": fmt.ratio(x) for name, x in p.speedups},
                 "max err f32 (long)": str(p.accuracy) if p.accuracy else "-",
                 "Pareto": "**yes**" if p.frontier else (p.excluded or "")}
                for p in trade.points]
        blocks += [markdown.heading(3, f"`{trade.workload}` at {trade.size}"),
                   markdown.table(pd.DataFrame(rows), index=False)]
        if f"frontier-{trade.workload}" in figures:
            blocks.append(markdown.image(figures[f"frontier-{trade.workload}"], out,
                                         f"accuracy vs speed, {trade.workload}"))
    if "error" in figures:
        blocks.append(markdown.image(figures["error"], out, "max error vs position, float32"))
    return markdown.join(*blocks)


def workload_tables(run: Run, name: str, baseline: str) -> Callable[[Mapping[str, Path], Path], str]:
    """Median, speedup and roof pivots of one workload, per dtype x threads, with its plots, in
    two steps: its tables now (the slow part, computed while the plots are drawn), then, given
    the plots drawn, the section with their links."""
    rows = run.bench[run.bench["workload"] == name]
    ran = speedup(run.bench, baseline).loc[rows.index].notna().any()
    versus = (f"speedup is {baseline}'s median over the implementation's (> 1x: faster)" if ran
              else f"no speedup: the usual choice, {baseline}, was not timed ok in this run")
    head = [markdown.heading(2, f"Workload `{name}`"), (
        f"Median time per call (`{pivots.NOISY_MARK}`: noisy, IQR/median > "
        f"{units.NOISY_IQR:.0%}); {versus}; *time / roof* is the implementation's median over "
        f"{ROOF}, timed in the same run (1x: at the memory limit). Rows fastest first.")]
    tables: list[str] = []
    for dtype, threads, group in groups(rows):
        tables += [markdown.heading(3, f"{dtype}, {fmt.threads(threads)}"),
                   "**Median time**", markdown.table(pivots.medians(group))]
        if speedup(run.bench, baseline).loc[group.index].notna().any():   # baseline ran here
            tables += [f"**Speedup vs {baseline}**",
                       markdown.table(pivots.speedups(group, run.bench, baseline))]
        if timed(group)["roof_ratio"].notna().any():
            tables += ["**Time / roof**", markdown.table(pivots.roof_ratios(group))]

    def with_plots(figures: Mapping[str, Path], out: Path) -> str:
        images = [markdown.image(figures[key], out, key) for key in
                  (f"{kind}-{name}" for kind in ("time", "speedup", "roof", "threads"))
                  if key in figures]
        return markdown.join(*head, *images, *tables)

    return with_plots


def change(cells: Sequence[Change], base: Run, of: str = "") -> str:
    """Per-cell change of the median vs a base run (of run `of`); bold where slower beyond the
    noise between the runs, as the compare gate judges it."""
    head = markdown.heading(2, f"Change {'of ' + of + ' ' if of else ''}vs {base.key}")
    if not cells:
        return markdown.join(head, "No cell was timed ok in both runs.")
    decision = decide(list(cells), 0.0)
    frame = as_frame(list(cells), decision)
    intro = (f"Change of each median in % of {base.key}'s (positive: slower). **Bold**: slower "
             "than the noise between the two runs explains, a rank test on their rounds "
             "agreeing; †: not judged (timed under load, or too few other cells to measure "
             f"the noise). {_cells(len(cells))} in both runs, {decision.judged} judged: "
             f"{len(decision.slower) + len(decision.lone)} slower beyond the noise, "
             f"{len(decision.slower)} of them with their implementation's other cells agreeing; "
             f"median change {fmt.pct(frame['pct'].median())}. `report --fail-slower PCT` "
             "fails on a cell when its median rose by more than PCT % and by more than the "
             "noise between the two runs explains (how far the roofs, or the other cells, of "
             "its thread count and size regime drifted apart), at least half of its "
             "implementation's other cells agree, and a one-sided Mann-Whitney U test on the two "
             "runs' timed rounds finds the rise significant; a rise alone is named, not failed; "
             "cells timed under load, or with too few others to measure the noise, are not "
             "judged (harness/report/gate.py; the gate prints what it judged and why).")
    blocks = [head, intro]
    for (name, dtype, threads), group in frame.groupby(["workload", "dtype", "threads"]):
        blocks += [markdown.heading(3, f"`{name}`, {dtype}, {fmt.threads(threads)}"),
                   markdown.table(pivots.changes(group))]
    return markdown.join(*blocks)


def noisy(run: Run) -> str:
    """The cells whose spread makes their median doubtful, worst first."""
    bench = run.bench.assign(spread=spread(run.bench))
    bad = bench[bench["spread"] > units.NOISY_IQR].sort_values("spread", ascending=False)
    head = markdown.heading(2, "Noisy cells")
    if bad.empty:
        return markdown.join(head, f"None: every cell has IQR/median <= {units.NOISY_IQR:.0%}.")
    frame = pd.DataFrame({"workload": bad["workload"], "impl": bad["impl"], "cell": _cell(bad),
                          "median": bad["median_s"].map(units.seconds), "IQR": bad["iqr_s"].map(units.seconds),
                          "IQR/median": bad["spread"].map(lambda v: f"{v:.0%}")})
    return markdown.join(head, f"{_cells(len(bad))} with IQR/median > {units.NOISY_IQR:.0%}; compare their "
                         "ratios with care (rerun on a quieter machine).",
                         markdown.table(frame.head(MAX_LISTED), index=False), _more(len(bad)))


def problems(run: Run) -> str:
    """Every cell that did not time ok (error, timeout, skip), with its reason."""
    bad = run.bench[~run.bench["ok"]]
    head = markdown.heading(2, "Failures, timeouts and skips")
    if bad.empty:
        return markdown.join(head, "None: every cell ran.")
    counts = ", ".join(f"{n} {s}" for s, n in bad["status"].value_counts().items())
    frame = pd.DataFrame({"workload": bad["workload"], "impl": bad["impl"], "cell": _cell(bad),
                          "status": bad["status"], "reason": bad["reason"].astype(str)})
    frame = frame.sort_values(["status", "impl"], kind="stable")
    return markdown.join(head, counts + ".", markdown.table(frame.head(MAX_LISTED), index=False),
                         _more(len(bad)))


def _cells(n: int) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _convention(name: str) -> str:
    """The timed convention after an implementation's name, unless it is the paper's."""
    return f" ({name})" if name and name != "paper" else ""


def _cell(rows: pd.DataFrame) -> pd.Series:
    return (rows["size"] + " " + rows["dtype"] + " " + rows["threads"].map(fmt.threads)
            + rows["device"].map(lambda d: "" if d == "cpu" else f" {d}"))


def _more(n: int) -> str:
    return f"... and {n - MAX_LISTED} more in bench.csv." if n > MAX_LISTED else ""
