"""What verify.csv says an implementation may be used as: its verdict and its grade.

Shared by the report (only what verify never found wrong is recommended) and bench's roofs
step (only that is timed against its roof). An implementation verify checked and never found
wrong passes; its grade is the weakest contract it met (harness/core/contract.py).
"""

from __future__ import annotations

import weakref
from typing import Optional

import pandas as pd

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
