"""Accuracy at the same positions: every implementation's error on the same few verify cases.

Errors grow with position (a float32 angle p * inv_freq is rounded to about
p * 6e-8), so an error is only comparable with another measured over the same
positions. Each column here is one verify case of the report's convention (its
first and last position named), the farthest-reaching ones; each cell is an
implementation's worst |error| on exactly that case, or '-' where verify did
not run it (a convention or dtype it does not support).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import pandas as pd

from harness.report import convention, fmt

#: How many cases (columns) a table shows: the farthest-reaching ones.
COLUMNS = 3
#: A verify case as the report tells cases apart (dtype aside).
CASE_KEY = ("length", "d_model", "offset", "layout", "freq_shift", "cos_first")


@dataclass(frozen=True, order=True)
class Case:
    """One verify case: positions offset .. offset + length - 1 of a table d_model wide."""

    length: int
    d_model: int
    offset: int

    @property
    def last(self) -> int:
        return self.offset + self.length - 1

    @property
    def label(self) -> str:
        return f"p {fmt.count(self.offset)}..{fmt.count(self.last)}"


@dataclass(frozen=True)
class Errors:
    """impl -> worst |error| per case (NaN: not run) in one dtype, and the cases it failed."""

    dtype: str
    cases: tuple[Case, ...]
    errors: pd.DataFrame          # index impl, columns cases
    failed: frozenset[tuple[str, Case]]

    def error(self, impl: str, case: Case) -> float:
        if impl not in self.errors.index or case not in self.errors.columns:
            return math.nan
        return float(self.errors.at[impl, case])

    def farthest_shared(self, *impls: str) -> Optional[Case]:
        """The farthest case every one of `impls` ran, None when they share none."""
        for case in self.cases:
            if all(math.isfinite(self.error(i, case)) for i in impls):
                return case
        return None


def errors(verify: Optional[pd.DataFrame], name: str, dtype: str, impls: Sequence[str],
           columns: int = COLUMNS) -> Optional[Errors]:
    """The `columns` farthest cases of convention `name` in `dtype` that any of `impls` ran."""
    rows = convention.cases(verify, name, offsets=True)
    if rows.empty:
        return None
    rows = rows[(rows["dtype"] == dtype) & rows["impl"].isin(impls)
                & rows["max_abs_err"].map(math.isfinite)]
    if rows.empty:
        return None
    rows = rows.assign(case=[Case(int(n), int(d), int(o)) for n, d, o in
                             zip(rows["length"], rows["d_model"], rows["offset"])])
    reach = rows.groupby("case")["impl"].nunique()
    # one case per last position (the one most implementations ran), farthest first
    best: dict[int, Case] = {}
    for case, count in sorted(reach.items(), key=lambda kv: (-kv[1], kv[0].d_model)):
        best.setdefault(case.last, case)
    chosen = tuple(best[last] for last in sorted(best, reverse=True)[:columns])
    worst = rows[rows["case"].isin(chosen)].groupby(["impl", "case"])["max_abs_err"].max()
    laid = worst.unstack("case").reindex(index=list(dict.fromkeys(impls)), columns=list(chosen))
    bad = rows[(rows["status"] == "fail") & rows["case"].isin(chosen)]
    return Errors(dtype, chosen, laid, frozenset(zip(bad["impl"], bad["case"])))


def table(found: Errors) -> pd.DataFrame:
    """The formatted table: most accurate far out first; a case verify failed marked `(fail)`."""
    laid = found.errors.dropna(how="all")
    order = sorted(laid.index, key=lambda i: tuple(_key(laid.at[i, c]) for c in found.cases) + (i,))
    rows = []
    for impl in order:
        cells = {f"{c.label} (d={c.d_model})": fmt.err(laid.at[impl, c])
                 + (" (fail)" if (impl, c) in found.failed else "") for c in found.cases}
        rows.append({"impl": impl, **cells})
    return pd.DataFrame(rows)


def _key(value: float) -> float:
    return value if math.isfinite(value) else math.inf
