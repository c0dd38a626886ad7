"""Per-cell change of one run against a base run, and the slowdown gate.

A cell is *slower* when the rise of its median exceeds both the allowed
percentage and the two runs' spread (their IQRs added): on a shared, noisy
machine a change inside the spread is not evidence of anything.

    slower  <=>  new - base > max(pct / 100 * base, iqr_new + iqr_base)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from harness.report import fmt
from harness.report.load import CELL
from harness.report.measures import timed


@dataclass(frozen=True)
class Change:
    """One cell timed ok in both runs."""

    workload: str
    impl: str
    device: str
    length: int
    d_model: int
    dtype: str
    threads: int
    batch: int
    base_s: float
    new_s: float
    base_iqr_s: float
    new_iqr_s: float

    @property
    def pct(self) -> float:
        """Change of the median in percent of the base (positive: slower)."""
        return 100.0 * (self.new_s - self.base_s) / self.base_s

    @property
    def spread_s(self) -> float:
        return self.base_iqr_s + self.new_iqr_s

    @property
    def beyond_spread(self) -> bool:
        return abs(self.new_s - self.base_s) > self.spread_s

    def slower_than(self, pct: float) -> bool:
        return self.new_s - self.base_s > max(pct / 100.0 * self.base_s, self.spread_s)

    def describe(self) -> str:
        return (f"{self.workload} {self.impl} {self.length}x{self.d_model} {self.dtype} "
                f"{fmt.threads(self.threads)}: {fmt.time(self.base_s)} -> {fmt.time(self.new_s)} "
                f"({fmt.pct(self.pct)}, spread {fmt.time(self.spread_s)})")


def changes(new: pd.DataFrame, base: pd.DataFrame) -> list[Change]:
    """Every implementation cell (roofs aside) timed ok in both runs."""
    key, columns = list(CELL), list(CELL) + ["median_s", "iqr_s"]

    def ok(frame: pd.DataFrame) -> pd.DataFrame:
        rows = timed(frame)
        return rows.loc[rows["ok"], columns].drop_duplicates(key)

    both = ok(new).merge(ok(base), on=key, suffixes=("_new", "_base"))
    return [Change(r.workload, r.impl, r.device, int(r.length), int(r.d_model), r.dtype,
                   int(r.threads), int(r.batch), float(r.median_s_base), float(r.median_s_new),
                   float(r.iqr_s_base), float(r.iqr_s_new))
            for r in both.itertuples()]


def broken(new: pd.DataFrame, base: pd.DataFrame) -> list[str]:
    """Cells timed ok in the base run that are now error, timeout or skip: the worst slowdown."""
    key = list(CELL)
    rows = timed(new).merge(timed(base), on=key, suffixes=("_new", "_base"))
    lost = rows[rows["ok_base"] & ~rows["ok_new"]]
    return [f"{r.workload} {r.impl} {r.length}x{r.d_model} {r.dtype} {fmt.threads(r.threads)}: "
            f"ok -> {r.status_new} ({r.reason_new})" for r in lost.itertuples()]


def overlap(new: pd.DataFrame, base: pd.DataFrame) -> int:
    """How many implementation cells the two runs share; a gate over none is no gate."""
    shared = timed(new)[list(CELL)].merge(timed(base)[list(CELL)], on=list(CELL))
    if shared.empty:
        raise ValueError("--compare: the two runs share no cell (implementation, size, dtype, "
                         "threads); nothing to compare")
    return len(shared)


def check_pct(pct: float) -> float:
    """The gate's percentage, or a ValueError naming the option when it is not > 0."""
    if not pct > 0:
        raise ValueError(f"--fail-slower must be a percentage > 0, got {pct:g}")
    return pct


def slower(cells: list[Change], pct: float) -> list[Change]:
    """The cells the gate fails on, worst first."""
    check_pct(pct)
    return sorted((c for c in cells if c.slower_than(pct)), key=lambda c: -c.pct)


def as_frame(cells: list[Change]) -> pd.DataFrame:
    """The changes as rows (with `size`, `pct` and `beyond_spread`) for pivoting."""
    rows = [{**asdict(c), "size": f"{c.length}x{c.d_model}", "elements": c.length * c.d_model,
             "pct": c.pct, "beyond_spread": c.beyond_spread} for c in cells]
    return pd.DataFrame(rows)
