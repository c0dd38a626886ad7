"""The Recommendation: per size regime x dtype x device x threads, the fastest correct implementation.

Algorithm, per workload and group (regime, dtype, device, threads):

1. Cells are the sizes of the group at which at least one implementation ran ok
   and was not flagged for load (harness.bench.contention: other processes on
   the cores it needed, or far slower at more threads than at one); the
   implementations whose cells were left out for that are named (`flagged`).
2. Ranked implementations are those verify passes (`harness.runs.verdicts.verdict`), with
   no `invalid` cell in bench (a result that is not a fresh finite table, or a
   lookup: harness.bench.validity), with ok times in the most cells; their
   score is the geometric mean of their medians over the cells they all share,
   so each size weighs the same.
3. The winner has the lowest score; its lead is runner-up score / winner score
   (the geometric mean of the per-cell ratios). Implementations excluded by
   verify but faster than the winner are named, so the trade is visible.
4. Each pick carries the grade verify gave it in the dtype (`exact` or `float32`,
   harness/core/contract.py); when it is only `float32`, the fastest ranked
   `exact` one is named with its time, so speed and accuracy are two facts.

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

from harness.report.accuracy import Accuracy, long_accuracy
from harness.report.measures import timed, workload_rank
from harness.runs.flags import flagged as flagged_rows
from harness.runs.verdicts import grade, verdict


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
    #: Geometric mean of its cold first calls over the same sizes (bench's `first_call`; a
    #: warm one found the caches of an earlier cell): a one-off build costs this, not
    #: `score_s` (JIT, page faults and nothing yet to recycle all land here). NaN: none cold.
    first_call_s: float = math.nan
    #: "impl: N cell(s) (why)" for each implementation whose cells in this group were left
    #: out because the machine's load may have distorted them.
    flagged: tuple[str, ...] = ()
    #: the contract verify graded it at in this dtype: exact | float32 | "" (no grades recorded)
    grade: str = ""
    #: when the pick is only float32: the fastest ranked implementation graded exact, and its time
    exact_pick: Optional[str] = None
    exact_score_s: float = math.nan


GROUP = ["workload", "regime", "dtype", "device", "threads"]


def recommend(bench: pd.DataFrame, verify: Optional[pd.DataFrame],
              include_flagged: bool = False) -> list[Recommendation]:
    """One Recommendation per group that has at least one implementation verify passes.
    `include_flagged`: rank flagged cells too (to show what they would have changed)."""
    rows = timed(bench)
    rows = rows.assign(regime=rows["elements"].map(lambda n: regime_of(int(n)).name))
    invalid = invalid_reasons(rows)
    marked = flagged_rows(rows) & rows["ok"]
    usable = rows[rows["ok"] & (include_flagged | ~marked)]
    notes = _flag_notes(rows[marked]) if not include_flagged else {}
    groups = {key: group for key, group in usable.groupby(GROUP, sort=False)
              if not _incidental(key, group, rows[rows["ok"]])}
    picks = [p for key, group in groups.items()
             if (p := _pick(group, verify, invalid, notes.get(key, ()))) is not None]
    order = {r.name: i for i, r in enumerate(REGIMES)}
    return sorted(picks, key=lambda p: (workload_rank(p.workload), p.device,
                                        order[p.regime.name], p.dtype, p.threads))


def _incidental(key: tuple, group: pd.DataFrame, timed_ok: pd.DataFrame) -> bool:
    """Whether a group at fewer threads than its workload, regime, dtype and device's most
    shares none of its implementations with the cells timed ok there (flagged ones included:
    a cell flagged for load is timed again at the threads the load left): only what runs at
    no other thread count (the pure-Python seed, at 1 thread at every size, where the default
    sweep times 1 thread at the largest size only). Its pick would be advice nobody timed:
    the committed run recommended seed-python-loops at 1 thread, 480 ms, beside a 101 us pick
    at 2."""
    *rest, threads = key
    same = timed_ok[(timed_ok[GROUP[:-1]] == pd.Series(rest, index=GROUP[:-1])).all(axis=1)]
    most = same["threads"].max()
    if threads == most:
        return False
    return not set(group["impl"]) & set(same.loc[same["threads"] == most, "impl"])


def invalid_reasons(rows: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(workload, impl) -> why an implementation with `invalid` cells may not be recommended."""
    bad = rows[rows["status"] == "invalid"]
    return {(str(w), str(i)):
            f"invalid in bench ({len(g)} cell(s): {g['reason'].astype(str).iloc[0]})"
            for (w, i), g in bad.groupby(["workload", "impl"])}


def _flag_notes(left_out: pd.DataFrame) -> dict[tuple, tuple[str, ...]]:
    """Per group: 'impl: N cell(s) flagged (kinds)' for its flagged rows."""
    notes: dict[tuple, tuple[str, ...]] = {}
    for key, rows in left_out.groupby(GROUP, sort=False):
        text = rows["flags"] if "flags" in rows.columns else pd.Series("", index=rows.index)
        lines = []
        for impl, g in rows.assign(flags=text.fillna("").astype(str)).groupby("impl"):
            kinds = sorted({part.split(":")[0] for flags in g["flags"]
                            for part in flags.split("; ") if part})
            lines.append(f"{impl}: {len(g)} cell(s) flagged"
                         + (f" ({', '.join(kinds)})" if kinds else ""))
        notes[key] = tuple(lines)
    return notes


def _pick(group: pd.DataFrame, verify: Optional[pd.DataFrame],
          invalid: Optional[dict[tuple[str, str], str]] = None,
          flagged: tuple[str, ...] = ()) -> Optional[Recommendation]:
    """The recommendation for the rows of one group, None when none of them passes verify."""
    cells = {impl: set(zip(g["length"], g["d_model"], g["batch"]))
             for impl, g in group.groupby("impl")}
    first = group.iloc[0]
    dtype = first["dtype"]
    invalid = invalid or {}
    why_not = {impl: invalid.get((str(first["workload"]), impl)) or verdict(verify, impl, dtype)
               for impl in cells}
    eligible = [i for i in cells if why_not[i] is None]
    if not eligible:
        return None
    most = max(len(cells[i]) for i in eligible)
    ranked = [i for i in eligible if len(cells[i]) == most]
    common = set.intersection(*(cells[i] for i in ranked))
    scores = _geomeans(group, [i for i in cells if common <= cells[i]], common)
    ranked.sort(key=lambda i: (scores[i], i))
    winner = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    lead = scores[runner_up] / scores[winner] if runner_up else math.nan
    excluded = tuple(f"{i}: {why_not[i]}" for i in sorted(scores, key=scores.get)
                     if why_not[i] is not None and scores[i] < scores[winner])
    convention = str(group.loc[group["impl"] == winner, "convention"].iloc[0])
    graded = grade(verify, winner, dtype)
    exact = next((i for i in ranked if graded == "float32" and grade(verify, i, dtype) == "exact"), None)
    return Recommendation(first["workload"], regime_of(int(first["elements"])), dtype,
                          first["device"], int(first["threads"]), winner, convention,
                          scores[winner], len(common), long_accuracy(verify, winner, dtype),
                          runner_up, lead, excluded,
                          _geomeans(_cold(group), [winner], common, "first_call_s")[winner], flagged,
                          graded, exact, scores[exact] if exact else math.nan)


def _cold(group: pd.DataFrame) -> pd.DataFrame:
    """The rows with their first call where it was cold (runs from before bench said which
    keep every first call)."""
    if "first_call" not in group.columns:
        return group
    return group.assign(first_call_s=group["first_call_s"].where(group["first_call"] == "cold"))


def _geomeans(group: pd.DataFrame, impls: list[str], cells: set,
              column: str = "median_s") -> dict[str, float]:
    """Each of `impls`' geometric mean of `column` over its rows in `cells` (NaN: none), in one
    pass over the group (one mask per implementation was a fifth of the report's time)."""
    keep = [c in cells for c in zip(group["length"], group["d_model"], group["batch"])]
    rows = group.loc[keep]
    means = np.log(rows[column].astype(float)).groupby(rows["impl"].astype(str)).mean()
    return {i: float(np.exp(means.get(i, math.nan))) for i in impls}
