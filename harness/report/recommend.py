"""The Recommendation: per size regime x dtype x device x threads, the fastest correct implementation.

Algorithm, per workload and group (regime, dtype, device, threads):

1. Cells are the sizes of the group at which at least one implementation ran ok.
2. Ranked implementations are those verify passes (`accuracy.verdict`) with ok
   times in the most cells; their score is the geometric mean of their medians
   over the cells they all share, so each size weighs the same.
3. The winner has the lowest score; its lead is runner-up score / winner score
   (the geometric mean of the per-cell ratios). Implementations excluded by
   verify but faster than the winner are named, so the trade is visible.

Regimes, by elements (length x d_model): *small* <= 2^16 (a float32 table of
at most 256 KiB: inside L2, call overhead dominates), *large* >= 2^24 (at
least 64 MiB: memory bandwidth dominates), *medium* in between.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from harness.report.accuracy import Accuracy, long_accuracy, verdict
from harness.report.measures import timed, workload_rank


@dataclass(frozen=True)
class Regime:
    """A range of table sizes in elements: lo <= elements < hi."""

    name: str
    lo: float
    hi: float
    label: str


REGIMES = (Regime("small", 0, 2**16 + 1, "small (<= 2^16 elements)"),
           Regime("medium", 2**16 + 1, 2**24, "medium (2^16 .. 2^24 elements)"),
           Regime("large", 2**24, math.inf, "large (>= 2^24 elements)"))


def regime_of(elements: int) -> Regime:
    return next(r for r in REGIMES if r.lo <= elements < r.hi)


@dataclass(frozen=True)
class Recommendation:
    """The pick for one group, its evidence and what it beat."""

    workload: str
    regime: Regime
    dtype: str
    device: str
    threads: int
    impl: str
    convention: str
    score_s: float
    cells: int
    accuracy: Optional[Accuracy]
    runner_up: Optional[str] = None
    lead: float = math.nan
    excluded: tuple[str, ...] = ()
    #: Geometric mean of its first calls over the same sizes: a one-off build costs this,
    #: not `score_s` (JIT, page faults and nothing yet to recycle all land here).
    first_call_s: float = math.nan


def recommend(bench: pd.DataFrame, verify: Optional[pd.DataFrame]) -> list[Recommendation]:
    """One Recommendation per group that has at least one implementation verify passes."""
    rows = timed(bench)
    rows = rows[rows["ok"]].assign(regime=rows["elements"].map(lambda n: regime_of(n).name))
    groups = rows.groupby(["workload", "regime", "dtype", "device", "threads"], sort=False)
    picks = [p for _, group in groups if (p := _pick(group, verify)) is not None]
    order = {r.name: i for i, r in enumerate(REGIMES)}
    return sorted(picks, key=lambda p: (workload_rank(p.workload), p.device,
                                        order[p.regime.name], p.dtype, p.threads))


def _pick(group: pd.DataFrame, verify: Optional[pd.DataFrame]) -> Optional[Recommendation]:
    """The recommendation for the rows of one group, None when none of them passes verify."""
    cells = {impl: set(zip(g["length"], g["d_model"], g["batch"]))
             for impl, g in group.groupby("impl")}
    first = group.iloc[0]
    dtype = first["dtype"]
    why_not = {impl: verdict(verify, impl, dtype) for impl in cells}
    eligible = [i for i in cells if why_not[i] is None]
    if not eligible:
        return None
    most = max(len(cells[i]) for i in eligible)
    ranked = [i for i in eligible if len(cells[i]) == most]
    common = set.intersection(*(cells[i] for i in ranked))
    scores = {i: _geomean(group, i, common) for i in cells if common <= cells[i]}
    ranked.sort(key=lambda i: (scores[i], i))
    winner = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    lead = scores[runner_up] / scores[winner] if runner_up else math.nan
    excluded = tuple(f"{i}: {why_not[i]}" for i in sorted(scores, key=scores.get)
                     if why_not[i] is not None and scores[i] < scores[winner])
    convention = str(group.loc[group["impl"] == winner, "convention"].iloc[0])
    return Recommendation(first["workload"], regime_of(int(first["elements"])), dtype,
                          first["device"], int(first["threads"]), winner, convention,
                          scores[winner], len(common), long_accuracy(verify, winner, dtype),
                          runner_up, lead, excluded, _geomean(group, winner, common, "first_call_s"))


def _geomean(group: pd.DataFrame, impl: str, cells: set, column: str = "median_s") -> float:
    mine = group[(group["impl"] == impl)]
    keep = [c in cells for c in zip(mine["length"], mine["d_model"], mine["batch"])]
    return float(np.exp(np.log(mine.loc[keep, column].astype(float)).mean()))
