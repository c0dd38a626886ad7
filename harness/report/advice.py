"""The sections that answer "what should I use": the short table first, its detail, the errors.

The first screen of report.md is `recommendation`: one row per workload x size
regime x dtype (x device), naming the implementation to use, how much faster it
is than the usual choice and its error beside the usual choice's on the same
positions. The rules, every thread count and the runners-up follow it; the
accuracy table (`accuracy`) puts every implementation on the same positions.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import pandas as pd

from harness.report import convention, fmt, markdown, positions
from harness.report.answer import Answer, gain
from harness.report.measures import usual
from harness.report.recommend import REGIMES, Recommendation
from harness.util import units

ACCURACY_TITLE = "Accuracy at the same positions"


def recommendation(found: Sequence[Answer], picks: Sequence[Recommendation], bench: pd.DataFrame,
                   named: str, name: str, verified: bool) -> str:
    """The short answer table, then per workload the pick at every thread count with its evidence."""
    blocks = [markdown.heading(2, "Recommendation"), _intro(found, name)]
    if not verified:
        return markdown.join(*blocks, (
            "This run has no verify.csv, so nothing can be recommended: run `python -m harness "
            "verify --out RUN_DIR`, then `python -m harness report RUN_DIR`."))
    if not found:
        return markdown.join(*blocks, f"No implementation that passes verify and builds the "
                             f"{name} table was timed ok.")
    blocks += [markdown.table(_short(found, name), index=False), _legend()]
    blocks += [markdown.heading(3, "Detail"), _RULES]
    for workload in dict.fromkeys(p.workload for p in picks):
        mine = [p for p in picks if p.workload == workload]
        blocks += [markdown.heading(4, f"`{workload}`"),
                   markdown.table(_detail(mine, bench, named, name), index=False)]
        blocks += [line for line in [_only_float32(mine)] if line]
    return markdown.join(*blocks)


def _only_float32(picks: Sequence[Recommendation]) -> str:
    """One sentence naming the picks that are faster but only float32-grade."""
    lesser = [p for p in picks if p.grade == "float32"]
    if not lesser:
        return ""
    where = "; ".join(f"{p.impl} ({p.regime.name}, {p.dtype}, {fmt.threads(p.threads)})"
                      + (f", where {p.exact_pick} is exact at {fmt.ratio(p.exact_score_s / p.score_s)} "
                         "the time" if p.exact_pick else "")
                      for p in lesser)
    return (f"Only `float32`-grade (its error grows with the position, as float32 angles do; "
            f"not within a few ulps everywhere): {where}. Require `exact` if far positions matter.")


def accuracy(tables: Mapping[str, Optional[positions.Errors]], name: str) -> str:
    """Per dtype: every implementation's error on the same farthest-reaching verify cases."""
    shown = {d: e for d, e in tables.items() if e is not None and not e.errors.dropna(how="all").empty}
    if not shown:
        return ""
    blocks = [markdown.heading(2, ACCURACY_TITLE), (
        f"Worst |implementation - float64 reference| on verify's farthest-reaching cases of the "
        f"{convention.describe(name)} convention: the same positions for every implementation "
        "in a column (`-`: not run, a convention or dtype it does not support; `(fail)`: beyond "
        "the tolerance). A float32 angle p x inv_freq is rounded to about p x 6e-8, so errors "
        "grow with position: compare within a column. Most accurate far out first.")]
    for dtype, found in shown.items():
        blocks += [markdown.heading(3, dtype),
                   markdown.table(positions.table(found), index=False)]
    return markdown.join(*blocks)


def _intro(found: Sequence[Answer], name: str) -> str:
    other = " (the default; `report --convention NAME` for another)" if name == convention.PAPER \
        else ""
    return (f"What to use: the fastest implementation that passes `verify` and builds the "
            f"**{convention.describe(name)}** table{other}{_others_note(found)}, "
            "timed in this run (at the thread count in its row: each group's most), and "
            "how much faster it is than the usual choice: the seed or plain implementation code "
            "starts from on that device, timed beside it.")


def _others_note(found: Sequence[Answer]) -> str:
    """Which convention the other kinds' picks build: their kind's first (`convention`)."""
    named = [f"{w}: {convention.spelled_out(w, convention.first_of_kind(w))}"
             for w in dict.fromkeys(a.pick.workload for a in found) if convention.first_of_kind(w)]
    return f" (the rest of the family in its kind's first convention: {', '.join(named)})" if named else ""


def _short(found: Sequence[Answer], name: str) -> pd.DataFrame:
    devices = {a.pick.device for a in found}
    workloads = {a.pick.workload for a in found}
    rows = []
    for a in found:
        p = a.pick
        row = {"workload": f"`{p.workload}`"} if len(workloads) > 1 else {}
        row.update({"size": p.regime.name, "dtype": p.dtype})
        if len(devices) > 1:
            row["device"] = p.device
        row.update({"use": f"**{p.impl}**" + _timed_as(p, name), "threads": p.threads,
                    "faster than usual": _gain_text(a.speedup, p.impl == a.usual),
                    "usual choice": a.usual or "-",
                    "max error (vs usual's)": _errors(a)})
        rows.append(row)
    return pd.DataFrame(rows)


def _legend() -> str:
    sizes = "; ".join(r.label for r in REGIMES)
    return ("Sizes: " + sizes + " (small tables sit in cache where call overhead dominates, large "
            "ones are bound by memory bandwidth). *Faster than usual*: the geometric mean over "
            "the regime's sizes of the usual choice's median time over the pick's. *Max error*: "
            "worst |error| on verify's farthest case that both ran, positions in brackets (every "
            f"implementation: [{ACCURACY_TITLE}](#{ACCURACY_TITLE.lower().replace(' ', '-')})).")


_RULES = ("Per size regime x dtype x device x threads timed, the fastest implementation that passes "
          "`verify` (no fail or error in verify.csv; one missing from it is never recommended). "
          "*time*: the geometric mean of its medians over the regime's sizes; *first call*: the "
          "same of its first calls, what a one-off build costs (names ending in `-recycled` "
          "reuse the memory of outputs the caller has let go: their *time* is a rebuild's); "
          "*lead*: the runner-up's time over the pick's; *grade*: the contract verify graded it at "
          "in that dtype (`exact`: a few ulps of the dtype at every position; `float32`: angles "
          "as if formed in float32, the error growing with the position); where a pick is only "
          "`float32`, *exact instead* names the fastest `exact` one and its time over the pick's.")


def _detail(picks: Sequence[Recommendation], bench: pd.DataFrame, named: str,
            name: str) -> pd.DataFrame:
    devices = {p.device for p in picks}
    rows = []
    for p in picks:
        base = usual(bench, p.workload, p.device, p.dtype, named)
        speedup = gain(bench, p, base)[0] if base else math.nan
        row = {"size": p.regime.name, "dtype": p.dtype}
        if len(devices) > 1:
            row["device"] = p.device
        if len({q.threads for q in picks}) > 1:
            row["threads"] = p.threads
        row.update({"use": f"**{p.impl}**" + _timed_as(p, name), "grade": p.grade or "-",
                    "time": units.seconds(p.score_s), "first call": units.seconds(p.first_call_s),
                    "vs usual": _gain_text(speedup, p.impl == base),
                    "usual choice": base or "-",
                    "runner-up (lead)": f"{p.runner_up} ({fmt.ratio(p.lead)})" if p.runner_up else "-",
                    "faster but excluded": "; ".join(p.excluded),
                    "exact instead": _exact_instead(p)})
        rows.append(row)
    return pd.DataFrame(rows)


def _exact_instead(p: Recommendation) -> str:
    """When the pick is only float32-grade: the fastest exact one and what exactness costs."""
    if p.grade != "float32":
        return "-"
    if p.exact_pick is None:
        return "none timed here"
    return f"{p.exact_pick} ({fmt.ratio(p.exact_score_s / p.score_s)} the time)"


def _gain_text(speedup: float, same: bool) -> str:
    if same:
        return "1x (it is the usual choice)"
    return fmt.ratio(speedup)


def _errors(a: Answer) -> str:
    if a.case is None and a.pick.accuracy is not None:    # another kind: no shared 1-D case
        return f"{a.pick.accuracy} (its worst in verify)"
    if a.case is None or not math.isfinite(a.error):
        return "-"
    theirs = f" vs {fmt.err(a.usual_error)}" if math.isfinite(a.usual_error) else ""
    return f"{fmt.err(a.error)}{theirs} (p <= {fmt.count(a.case.last)})"


def _timed_as(p: Recommendation, name: str) -> str:
    """The convention bench timed it in, when not the one asked for (its time is that one's)."""
    if not p.convention or p.convention == name:
        return ""
    return (f" (timed building the {convention.spelled_out(p.workload, p.convention)} table, "
            "the first convention it supports)")
