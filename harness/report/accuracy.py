"""What verify.csv says about an implementation: may it be recommended, how accurate is it far out.

Only an implementation that verify checked and never found wrong can be
recommended: speed is worthless on a wrong table. Accuracy is quoted where it
is worst, at long positions (float32 angles lose ~p * 6e-8 there).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Optional

import pandas as pd

from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.report import fmt

BAD = ("fail", "error")
#: verify frames split by implementation, newest last (a report holds one or two at a time).
_SPLIT: list[tuple[weakref.ref, dict[str, pd.DataFrame]]] = []
_SPLIT_KEPT = 4


def rows_of(verify: pd.DataFrame, impl: str) -> pd.DataFrame:
    """verify's rows of `impl`. The frame is split by implementation once and the split kept
    while the frame lives: a report asks about every implementation many times, and a mask
    over all of verify's rows each time was a third of the report's time."""
    split = next((parts for ref, parts in _SPLIT if ref() is verify), None)
    if split is None:
        split = {str(name): rows for name, rows in verify.groupby("impl", sort=False)}
        _SPLIT[:] = [*_SPLIT[-(_SPLIT_KEPT - 1):], (weakref.ref(verify), split)]
    found = split.get(str(impl))
    return found if found is not None else verify.iloc[0:0]


@dataclass(frozen=True)
class Accuracy:
    """Worst |impl - reference| over verify cases reaching `LONG_POSITIONS` (else the farthest)."""

    max_abs_err: float
    position: int

    def __str__(self) -> str:
        if self.position <= 0:          # no positions to quote (a timestep embedding)
            return fmt.err(self.max_abs_err)
        return f"{fmt.err(self.max_abs_err)} (p <= {fmt.count(self.position)})"


def verdict(verify: Optional[pd.DataFrame], impl: str, dtype: Optional[str] = None) -> Optional[str]:
    """None when `impl` passes verify (with a passing case in `dtype`), else why it may not be used."""
    if verify is None:
        return "no verify.csv in this run"
    mine = rows_of(verify, impl)
    if mine.empty:
        return "not in verify.csv"
    counts = mine["status"].value_counts()
    if any(counts.get(s, 0) for s in BAD):
        return "fails verify (" + ", ".join(f"{counts.get(s, 0)} {s}" for s in BAD) + ")"
    if dtype is not None and not ((mine["dtype"] == dtype) & (mine["status"] == "pass")).any():
        return f"no passing {dtype} case in verify"
    return None


def grade(verify: Optional[pd.DataFrame], impl: str, dtype: Optional[str] = None) -> str:
    """The contract `impl` met on every verify case it passed (in `dtype`): "exact" or
    "float32" (harness/core/contract.py); "" when verify.csv has no grades (an older run)."""
    if verify is None or "grade" not in verify.columns:
        return ""
    mine = rows_of(verify, impl)
    mine = mine[mine["status"] == "pass"]
    if dtype is not None:
        mine = mine[mine["dtype"] == dtype]
    grades = set(mine["grade"].dropna().astype(str)) - {""}
    return "float32" if "float32" in grades else "exact" if grades else ""


def long_accuracy(verify: Optional[pd.DataFrame], impl: str, dtype: str) -> Optional[Accuracy]:
    """The worst error of `impl` in `dtype` at long positions, None when verify never ran it."""
    if verify is None:
        return None
    mine = rows_of(verify, impl)
    rows = mine[(mine["dtype"] == dtype) & mine["max_abs_err"].map(math.isfinite)]
    if rows.empty:
        return None
    far = rows[rows["max_position"] >= LONG_POSITIONS]
    if far.empty:
        far = rows[rows["max_position"] == rows["max_position"].max()]
    return Accuracy(float(far["max_abs_err"].max()), int(far["max_position"].max()))


def error_by_position(verify: Optional[pd.DataFrame], dtype: str = "float32") -> pd.DataFrame:
    """Worst error per implementation and largest position, over the `dtype` cases that ran.

    Cases with `scale` != 1 are left out: their angles, which the error follows, are not
    their positions.
    """
    columns = ["impl", "max_position", "max_abs_err"]
    if verify is None:
        return pd.DataFrame(columns=columns)
    unscaled = verify["scale"] == 1.0 if "scale" in verify.columns else True
    rows = verify[(verify["dtype"] == dtype) & verify["max_abs_err"].map(math.isfinite) & unscaled]
    worst = rows.groupby(["impl", "max_position"], as_index=False)["max_abs_err"].max()
    return worst[columns].sort_values(["impl", "max_position"]).reset_index(drop=True)
