"""The answer a reader came for: per workload, regime, dtype and device, what to use and the gain.

One `Answer` per (workload, regime, dtype, device), from the Recommendation at
the most threads timed there (what a program gets by default; the detail table
has every thread count). Its gain is over the *usual choice* of that device,
the seed or plain implementation most code starts from (`measures.usual`), as
the geometric mean over the regime's sizes both ran of usual median / pick
median, timed in the same run, at the pick's thread count, or where the usual choice has no
clean cell there, in a cell at more threads whose work ran on no more than the pick's
(`threads_ran`: NumPy timed at 2 threads beside a busy core keeps its clean answer while the
pick's 2-thread cell was flagged and answered at 1). Flagged cells are never compared. Its
error and the usual choice's are read on the same verify case (`positions`), so the two
numbers cover the same positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from harness.report.measures import regime_rows, usual
from harness.report.positions import Case, Errors
from harness.report.recommend import Recommendation
from harness.runs import flags as flag_rules


@dataclass(frozen=True)
class Answer:
    """What to use for one workload x regime x dtype x device, and what it gains."""

    pick: Recommendation
    usual: Optional[str]          # None: no usual choice timed on this device
    speedup: float                # usual / pick, geometric mean over shared sizes (NaN: none)
    sizes: int                    # how many sizes the speedup is over
    case: Optional[Case] = None   # the verify case both errors are read on
    error: float = math.nan
    usual_error: float = math.nan


def answers(picks: Sequence[Recommendation], bench: pd.DataFrame,
            errors: Mapping[str, Optional[Errors]], named: str) -> list[Answer]:
    """The Answer of each group, in the order of `picks` (`errors`: by dtype; `named`: --baseline)."""
    most: dict[tuple, Recommendation] = {}
    for p in picks:
        key = (p.workload, p.regime.name, p.dtype, p.device)
        if key not in most or _better(p, most[key]):
            most[key] = p
    out = []
    for p in most.values():
        base = usual(bench, p.workload, p.device, p.dtype, named)
        speedup, sizes = gain(bench, p, base) if base else (math.nan, 0)
        found = errors.get(p.dtype)
        # the farthest case both ran; else the pick's own (the usual choice may not build this
        # convention at all)
        case = (found.farthest_shared(p.impl, base) if base else None) if found else None
        case = case or (found.farthest_shared(p.impl) if found else None)
        out.append(Answer(p, base, speedup, sizes, case,
                          found.error(p.impl, case) if case else math.nan,
                          found.error(base, case) if case and base else math.nan))
    return out


def _better(p: Recommendation, than: Recommendation) -> bool:
    """Whether `p` answers its group before `than`: faster, or as fast at more threads. Under
    load the all-core group can keep one clean cell, whose pick was 5x slower than the usual
    choice while the 1-thread pick was 1.2x faster than it."""
    if math.isfinite(p.score_s) and math.isfinite(than.score_s) and p.score_s != than.score_s:
        return p.score_s < than.score_s
    return p.threads > than.threads


def gain(bench: pd.DataFrame, pick: Recommendation, base: str) -> tuple[float, int]:
    """Geometric mean of base / pick medians over the group's sizes both ran ok and unflagged,
    and their count (the base at more threads where its work needed no more cores)."""
    def rows(threads: int) -> pd.DataFrame:
        return regime_rows(bench, pick.workload, pick.regime, pick.dtype, pick.device, threads)

    mine = _medians(rows(pick.threads), pick.impl)
    theirs = _medians(rows(pick.threads), base)
    for threads in sorted(t for t in set(bench["threads"]) if t > pick.threads):
        more = rows(threads)
        fits = [flag_rules.needed(r) <= pick.threads for r in more.to_dict("records")]
        theirs = theirs.combine_first(_medians(more[fits], base))
    shared = mine.index.intersection(theirs.index)
    if shared.empty:
        return math.nan, 0
    return float(np.exp(np.log(theirs[shared] / mine[shared]).mean())), len(shared)


def _medians(rows: pd.DataFrame, impl: str) -> pd.Series:
    ok = rows[(rows["impl"] == impl) & rows["ok"] & ~flag_rules.flagged(rows)]
    return ok.groupby(["length", "d_model", "batch"])["median_s"].min()
