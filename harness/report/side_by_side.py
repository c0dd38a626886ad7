"""Sections of a report over several runs (commits, machines, CI runners), one column per run.

Columns are keyed by machine and run id. Absolute times of different machines
are shown side by side but the comparable figure is each run's own speedup
over its baseline, shown next to every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from harness.report import fmt, markdown, sections
from harness.report.load import Run
from harness.report.measures import baseline_speedup, groups, timed, workload_rank
from harness.report.pivots import speed_order
from harness.report.recommend import REGIMES, Recommendation
from harness.util import units


def keys(runs: Sequence[Run]) -> list[str]:
    """Column label of each run, made unique when two runs share machine and run id."""
    labels = [r.key for r in runs]
    return [k if labels.count(k) == 1 else f"{k} #{i + 1}" for i, k in enumerate(labels)]


def runs_table(runs: Sequence[Run], out: Path) -> str:
    """Environment of every run, one column each, with a link to its own report."""
    def column(run: Run) -> dict[str, str]:
        env = run.env
        own = run.extra("report.md")
        return {"machine": run.machine, "run id": run.run_id, "time (UTC)": env.get("time_utc", "-"),
                "git commit": sections.commit(env),
                "CPU": f"{env.get('cpu_model', '-')} ({env.get('cores_logical', '?')} cores)",
                "GPU": env.get("gpu") or "none",
                **{name: v or "-" for name, v in env.get("versions", {}).items()},
                "report": markdown.link(own, out, "report.md") if own else "-",
                "directory": markdown.link(run.path, out, run.path.name)}
    columns = {k: column(r) for k, r in zip(keys(runs), runs)}
    fields = list(dict.fromkeys(f for c in columns.values() for f in c))
    fields = [f for f in fields if f not in ("report", "directory")] + ["report", "directory"]
    frame = pd.DataFrame(columns).reindex(fields).fillna("-")
    frame.index.name = ""
    return markdown.join(markdown.heading(2, "Runs"), markdown.table(frame))


def recommendations(runs: Sequence[Run], picks: Sequence[Sequence[Recommendation]],
                    convention: str = "paper") -> str:
    """Each run's pick per group (within `convention`), with its lead over the runner-up."""
    head = markdown.heading(2, "Recommendation")
    group = ["workload", "regime", "dtype", "device", "threads"]
    rows = [{"workload": p.workload, "regime": p.regime.name, "dtype": p.dtype, "device": p.device,
             "threads": p.threads, "run": key, "pick": f"{p.impl} ({fmt.ratio(p.lead)} lead)"}
            for key, mine in zip(keys(runs), picks) for p in mine]
    if not rows:
        return markdown.join(head, "No run has a recommendation.")
    order = {r.name: i for i, r in enumerate(REGIMES)}
    frame = (pd.DataFrame(rows).pivot_table(index=group, columns="run", values="pick", aggfunc="first")
             .reindex(columns=keys(runs)).fillna("-").reset_index())
    rank = {"workload": workload_rank, "regime": order.get}
    frame = frame.sort_values(group, key=lambda c: c.map(rank[c.name]) if c.name in rank else c)
    frame.columns.name = None
    return markdown.join(head, "The fastest implementation that passes verify and builds the "
                         f"{convention} table, per run (see each run's report for the rules, "
                         "accuracy and runner-up).",
                         markdown.table(frame, index=False))


def timings(runs: Sequence[Run], baselines: Sequence[Mapping[str, str]]) -> str:
    """Per workload x dtype x threads: median (speedup vs the run's baseline), one column per run."""
    labelled = []
    for key, run, base in zip(keys(runs), runs, baselines):
        rows = timed(run.bench)
        ratio = baseline_speedup(run.bench, base)
        text = [f"{units.seconds(m)} ({fmt.ratio(x)})" if ok else status for m, x, ok, status in
                zip(rows["median_s"], ratio[rows.index], rows["ok"], rows["status"])]
        labelled.append(rows.assign(run=key, text=text))
    every = pd.concat(labelled, ignore_index=True)
    blocks = []
    for workload in sorted(every["workload"].unique(), key=workload_rank):
        mine = every[every["workload"] == workload]
        named = sorted({b.get(workload, "-") for b in baselines})
        blocks += [markdown.heading(2, f"Workload `{workload}`"),
                   f"Median time (speedup vs {', '.join(named)} in the same run)."]
        for dtype, threads, group in groups(mine):
            laid = group.pivot_table(index=["impl", "size"], columns="run", values="text",
                                     aggfunc="first").reindex(columns=keys(runs)).fillna("")
            sizes = {s: i for i, s in enumerate(
                group.drop_duplicates("size").sort_values(["elements", "length"])["size"])}
            rank = {impl: i for i, impl in enumerate(speed_order(group))}
            laid = laid.sort_index(key=lambda level: level.map(rank if level.name == "impl" else sizes))
            laid.columns.name = None
            blocks += [markdown.heading(3, f"{dtype}, {fmt.threads(threads)}"), markdown.table(laid)]
    return markdown.join(*blocks)
