"""`build`: load run directories, compute the report's data, draw its plots, write report.md.

The one entry point the bench engine (end of a sweep) and the `report` verb
both call; everything else in the package is a step of it.
"""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import pandas as pd

from harness.report import (advice, bounds, convention, device, extras, flags, html, markdown, plots, positions,
                            sections, side_by_side, summary)
from harness.report.accuracy import error_by_position
from harness.report.answer import answers
from harness.report.compare import MIN_SHARED_PCT, changes, require_overlap
from harness.report.figures import palette
from harness.report.frontier import ACCURACY_DTYPE, Tradeoff, reference_size, tradeoff
from harness.report.load import Run, load_run
from harness.report.measures import (DEFAULT_BASELINES, SEED_000, SEED_WORKLOAD, baselines, dtype_order, timed,
                                     workload_rank)
from harness.report.recommend import REGIMES, Recommendation, recommend
from harness.runs import paired
from harness.runs.results import ANSWER
from harness.util import cpus, io
from harness.util.exitcodes import UsageError


def build(run_dirs: Sequence[Path], out_dir: Optional[Path] = None,
          baseline: str = DEFAULT_BASELINES["table"], compare: Optional[Path] = None,
          only: Sequence[str] = (), min_shared: float = MIN_SHARED_PCT,
          convention_name: str = convention.PAPER) -> Path:
    """Write report.md, report.html (harness.report.html: the same, one self-contained page)
    and plots/ for one run, or side by side for several.

    Recommendations are made within `convention_name` (harness.report.convention):
    only implementations verify found building that table are picked.
    One run: into `out_dir`, default the run directory itself. Several runs:
    into `out_dir`, which is then required. `compare`: a base run directory
    whose medians each cell is compared with; each run must share at least
    `min_shared` % of either run's cells with it. `only`: implementation globs
    (baselines and roofs are kept so that ratios still have a denominator).
    Returns the path of report.md; nothing is written when any input is refused.
    """
    if not run_dirs:
        raise UsageError("no run directory given")
    convention.fields(convention_name)           # an unknown name is refused before any work
    keep = {*DEFAULT_BASELINES.values(), baseline, SEED_000}
    runs = [load_run(d, only, keep) for d in run_dirs]
    base = load_run(compare, only, keep) if compare is not None else None
    if base is not None:   # a comparison over a sliver of the cells is refused, not drawn
        for run in runs:
            require_overlap(run.bench, base.bench, f"{run.path} and {base.path}", min_shared)
    if len(runs) == 1:
        out = Path(out_dir) if out_dir is not None else runs[0].path
        text = _single(runs[0], out, baseline, base, convention_name)
    elif out_dir is None:
        raise UsageError("a report over several run directories needs an output directory (--out)")
    else:
        out = Path(out_dir)
        text = _several(runs, out, baseline, base, convention_name)
    path = io.write_text(out / "report.md", text)
    html.write(text, out, title=text.splitlines()[0].lstrip("# "))
    return path


def _single(run: Run, out: Path, baseline: str, base: Optional[Run], name: str) -> str:
    named = baselines(run.bench, baseline)
    workloads = _workloads(run)
    chosen = convention.within(run.bench, run.verify, name)
    picks = recommend(chosen, run.verify)
    errors = _errors(run, name)
    found = answers(picks, run.bench, errors, baseline)
    trades = [t for w in workloads if (t := tradeoff(chosen, run.verify, w, _ratios_for(w, named)))]
    usuals = {**named, **{f"{a.pick.dtype}-{a.pick.device}": a.usual for a in found if a.usual}}
    collect = _start_drawing(run, out / "plots", named, trades, _roles(picks, usuals, trades))
    try:            # what needs no plot is computed while they are drawn
        title = markdown.heading(1, f"pe-harness benchmark report — {run.machine}")
        lead = (f"Run `{run.run_id}` at {run.env.get('time_utc', 'an unknown time')}, commit "
                f"`{sections.commit(run.env)[:12]}`; environment at the end.")
        missing = summary.unanswered(run.bench, found)
        io.write_text(out / ANSWER, "".join(f"{line}\n" for line in summary.lines(found, run.verify,
                                                                                 missing)))
        before = [sections.sources([run, *([base] if base else [])]),
                  advice.recommendation(found, picks, run.bench, baseline, name,
                                        run.verify is not None),
                  advice.accuracy(errors, name),
                  device.section(run.device, run.env, run.verify), bounds.section(chosen, run.verify, paired.read(run.path))]
        parts = [sections.workload_tables(run, w, named[w]) for w in workloads]
        after = [sections.change(changes(run.bench, base.bench), base) if base else "",
                 sections.noisy(run), sections.problems(run), flags.section(run, chosen, picks),
                 extras.conventions(run, out), extras.precision(run, out), extras.files(run, out),
                 sections.environment(run)]
    finally:
        figures = collect()
    detail = markdown.join(
        *before, sections.accuracy_vs_speed(trades, figures, out, convention.describe(name)),
        *(part(figures, out) for part in parts), *after)
    return markdown.join(title, lead, extras.post_failures(run), summary.section(found, run.verify),
                         summary.still_flagged(run, found), summary.contents(detail, out), detail)


def _errors(run: Run, name: str) -> dict[str, Optional[positions.Errors]]:
    """Errors on the same positions, per timed dtype, of every implementation timed."""
    rows = timed(run.bench)
    impls = sorted(set(rows["impl"]))
    return {d: positions.errors(run.verify, name, d, impls) for d in dtype_order(rows["dtype"])}


def _several(runs: Sequence[Run], out: Path, baseline: str, base: Optional[Run], name: str) -> str:
    named = [baselines(r.bench, baseline) for r in runs]
    title = markdown.heading(1, f"pe-harness benchmark report — {len(runs)} runs side by side")
    comparisons = [sections.change(changes(run.bench, base.bench), base, of=key)
                   for key, run in zip(side_by_side.keys(runs), runs)] if base else []
    picks = [recommend(convention.within(r.bench, r.verify, name), r.verify) for r in runs]
    return markdown.join(
        title, "Each column is one run, keyed by machine and run id.",
        sections.sources([*runs, *([base] if base else [])]),
        side_by_side.recommendations(runs, picks, convention.describe(name)),
        side_by_side.timings(runs, named), *comparisons,
        side_by_side.runs_table(runs, out))


def _workloads(run: Run) -> list[str]:
    return sorted(set(run.bench["workload"]), key=workload_rank)


def _ratios_for(workload: str, named: dict[str, str]) -> list[str]:
    """Baselines quoted in the accuracy-vs-speed table: the workload's, and seed 000 for tables."""
    # seed 000 builds the 1-D table: the speed targets' reference point is quoted there only
    extra = [SEED_000] if workload == SEED_WORKLOAD and named[workload] != SEED_000 else []
    return [named[workload], *extra]


def _roles(picks: Sequence[Recommendation], usuals: dict[str, str],
           trades: list[Tradeoff]) -> dict[str, str]:
    """The few implementations plots draw in colour, each with what makes it matter
    (`usuals`: the usual choices, by any key); a pick says for which size regimes, since a
    plot spans them all."""
    regimes = {r.name: i for i, r in enumerate(REGIMES)}
    picked: dict[str, set[str]] = {}
    for p in picks:
        picked.setdefault(p.impl, set()).add(p.regime.name)
    roles: dict[str, list[str]] = {}
    for impl, role in [*((impl, "recommended for " + (" and ".join(sorted(names, key=regimes.get))
                                                      if len(names) < len(REGIMES) else "every size"))
                         for impl, names in picked.items()),
                       *((b, "usual choice") for b in usuals.values()),
                       *((p.impl, "Pareto") for t in trades for p in t.points if p.frontier)]:
        if role not in roles.setdefault(impl, []):
            roles[impl].append(role)
    return {impl: ", ".join(r) for impl, r in roles.items()}


#: Libraries whose own native threads make a forked child unsafe (a lock held by one of them
#: at the fork stays held in the child): a report built in a process that loaded one (a test
#: session, a notebook) draws its plots one after another. `python -m harness report` loads none.
_THREADED = ("jax", "torch", "tensorflow", "numba")


def _fork_is_safe() -> bool:
    return not any(name in sys.modules for name in _THREADED)


def _call(task: Callable[[], dict[str, Optional[Path]]]) -> dict[str, Optional[Path]]:
    return task()


def _frontier_plot(trade: Tradeoff, machine: str, where: Path,
                   styles: Any) -> dict[str, Optional[Path]]:
    return {f"frontier-{trade.workload}": plots.frontier(
        trade, machine, where / f"frontier-{trade.workload}.png", styles)}


def _error_plot(verify: Optional[pd.DataFrame], machine: str, where: Path,
                styles: Any) -> dict[str, Optional[Path]]:
    errors = error_by_position(verify, ACCURACY_DTYPE)
    return {"error": plots.error_vs_position(errors, ACCURACY_DTYPE, machine,
                                             where / f"error-{ACCURACY_DTYPE}.png", styles)}


def _workload_plots(bench: pd.DataFrame, named: dict[str, str], machine: str, where: Path,
                    styles: Any, w: str) -> dict[str, Optional[Path]]:
    """The four plots of one workload (a task of its own: workloads are drawn at once)."""
    ref = reference_size(bench, w)
    dtype = ref[2] if ref else ACCURACY_DTYPE
    return {f"time-{w}": plots.time_vs_length(bench, w, dtype, machine, where / f"time-{w}.png",
                                              styles),
            f"speedup-{w}": plots.speedup_heatmap(bench, w, named[w], machine,
                                                  where / f"speedup-{w}.png", styles),
            f"roof-{w}": plots.roof_heatmap(bench, w, machine, where / f"roof-{w}.png", styles),
            f"threads-{w}": plots.scaling(bench, w, machine, where / f"threads-{w}.png", styles)}


def _start_drawing(run: Run, where: Path, named: dict[str, str], trades: list[Tradeoff],
                   roles: dict[str, str]) -> Callable[[], dict[str, Path]]:
    """Start drawing every plot of a one-run report; returns the call that waits for them and
    gives each plot's path, keyed `kind-workload` (and `error`; absent when empty). Each
    workload's four plots, each frontier and the error plot are tasks of their own, drawn at
    once on every core (seconds of Agg layout each: the frontiers drawn one after another here
    once came after the rest, about a quarter of the report's time),
    while the report's tables are computed (drawing only after them left a core idle for as
    long as the tables took)."""
    verified = run.verify["impl"] if run.verify is not None else []
    bench = run.bench
    styles = palette([*bench["impl"], *verified], roofs=bench.loc[bench["is_roof"], "impl"],
                     highlight=roles)
    machine = run.machine
    tasks: list[Callable[[], dict[str, Optional[Path]]]] = [
        partial(_workload_plots, bench, named, machine, where, styles, w) for w in _workloads(run)]
    tasks += [partial(_frontier_plot, t, machine, where, styles) for t in trades]
    tasks.append(partial(_error_plot, run.verify, machine, where, styles))
    if not (len(tasks) > 1 and cpus.usable() > 1 and _fork_is_safe()):
        drawn = _drawn(map(_call, tasks))
        return lambda: drawn
    pool = ProcessPoolExecutor(min(cpus.usable(), len(tasks)),
                               mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(_call, task) for task in tasks]
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise

    def collect() -> dict[str, Path]:
        try:
            return _drawn(f.result() for f in futures)
        finally:
            pool.shutdown(cancel_futures=True)

    return collect


def _drawn(results: Iterable[dict[str, Optional[Path]]]) -> dict[str, Path]:
    drawn: dict[str, Optional[Path]] = {}
    for mine in results:
        drawn.update(mine)
    return {k: v for k, v in drawn.items() if v is not None}
