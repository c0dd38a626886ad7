"""Per-cell change of one run against a base run, and the slowdown gate.

A cell is *slower* when the rise of its median exceeds both the allowed
percentage and the two runs' spread (their IQRs added): on a shared, noisy
machine a change inside the spread is not evidence of anything.

    slower  <=>  new - base > max(pct / 100 * base, iqr_new + iqr_base)

A cell flagged for load in either run (harness.bench.contention: other
processes on the cores it needed, or far slower at more threads than at one)
is not compared: its change says more about the machine than the code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from harness.report import fmt
from harness.report.measures import timed
from harness.runs.flags import flagged
from harness.runs.identity import FIELDS as CELL
from harness.util import units


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
    heads: int = 1

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
        heads = f" {self.heads} heads" if self.heads != 1 else ""
        return (f"{self.workload} {self.impl} {self.length}x{self.d_model}{heads} {self.dtype} "
                f"{fmt.threads(self.threads)}: {units.seconds(self.base_s)} -> {units.seconds(self.new_s)} "
                f"({fmt.pct(self.pct)}, spread {units.seconds(self.spread_s)})")


def changes(new: pd.DataFrame, base: pd.DataFrame) -> list[Change]:
    """Every implementation cell (roofs aside) timed ok and not flagged for load in both runs."""
    key, columns = list(CELL), list(CELL) + ["median_s", "iqr_s"]

    def ok(frame: pd.DataFrame) -> pd.DataFrame:
        rows = timed(frame)
        return rows.loc[rows["ok"] & ~flagged(rows), columns].drop_duplicates(key)

    both = ok(new).merge(ok(base), on=key, suffixes=("_new", "_base"))
    return [Change(r.workload, r.impl, r.device, int(r.length), int(r.d_model), r.dtype,
                   int(r.threads), int(r.batch), float(r.median_s_base), float(r.median_s_new),
                   float(r.iqr_s_base), float(r.iqr_s_new), int(r.heads))
            for r in both.itertuples()]


def broken(new: pd.DataFrame, base: pd.DataFrame) -> list[str]:
    """Cells timed ok in the base run that are now error, timeout or skip: the worst slowdown."""
    key = list(CELL)
    rows = timed(new).merge(timed(base), on=key, suffixes=("_new", "_base"))
    lost = rows[rows["ok_base"] & ~rows["ok_new"]]
    return [f"{r.workload} {r.impl} {r.length}x{r.d_model} {r.dtype} {fmt.threads(r.threads)}: "
            f"ok -> {r.status_new} ({r.reason_new})" for r in lost.itertuples()]


#: Default of `--min-shared`: the part of each run's cells the other must also have timed.
MIN_SHARED_PCT = 50.0


@dataclass(frozen=True)
class Overlap:
    """How two runs line up: implementation cells in each, in both, and compared (in both and
    timed ok in the base: the gate judges each as still ok and how fast, or broken); `flagged`
    of the compared, timed ok in both but flagged for load in either, whose speed is not judged."""

    new_cells: int
    base_cells: int
    shared: int
    compared: int
    flagged: int = 0

    def coverage(self) -> float:
        """The shared cells in percent of the larger run's (the weaker side of the comparison)."""
        most = max(self.new_cells, self.base_cells)
        return 100.0 * self.shared / most if most else 0.0

    def describe(self) -> str:
        text = (f"compared {self.compared} cell(s) (in both runs and timed ok in the base); the "
                f"new run has {self.new_cells}, the base {self.base_cells}, {self.shared} shared")
        if self.flagged:
            text += (f"; {self.flagged} of the compared flagged for load in either run "
                     "(`flags` in bench.csv), their speed not judged")
        return text


def overlap(new: pd.DataFrame, base: pd.DataFrame) -> Overlap:
    """Count the implementation cells (roofs aside) of each run, those in both, and those of
    them timed ok in the base."""
    key = list(CELL)
    rows_new, rows_base = (timed(f).drop_duplicates(key, keep="last") for f in (new, base))
    rows_new, rows_base = (r.assign(flagged=flagged(r) & r["ok"]) for r in (rows_new, rows_base))
    both = rows_new[key + ["ok", "flagged"]].merge(rows_base[key + ["ok", "flagged"]], on=key,
                                                   suffixes=("_new", "_base"))
    judged_out = both["ok_base"] & both["ok_new"] & (both["flagged_new"] | both["flagged_base"])
    return Overlap(len(rows_new), len(rows_base), len(both), int(both["ok_base"].sum()),
                   int(judged_out.sum()))


def require_overlap(new: pd.DataFrame, base: pd.DataFrame, what: str,
                    min_pct: float = MIN_SHARED_PCT) -> Overlap:
    """The overlap, or a ValueError when a verdict over it would mean little: no shared cell
    timed ok in the base, or fewer shared cells than `min_pct` % of either run's (a killed
    or --only run against a full one, or a different grid). `what` names the two runs."""
    check_min_shared(min_pct)
    found = overlap(new, base)
    if found.shared == 0:
        raise ValueError(f"--compare: {what} share no cell (implementation, size, dtype, "
                         "threads); nothing to compare")
    if found.compared == 0:
        raise ValueError(f"--compare: {what} share {found.shared} cell(s), none timed ok in "
                         "the base; nothing to compare against")
    if found.coverage() < min_pct:
        raise ValueError(f"--compare: {what} share too few cells: {found.shared} of "
                         f"{found.new_cells} (new) and {found.base_cells} (base), "
                         f"{found.coverage():.0f}% < --min-shared {min_pct:g}%; compare runs of "
                         "the same grid, narrow both with --only, or lower --min-shared")
    return found


def check_min_shared(pct: float) -> float:
    """--min-shared, or a ValueError naming the option when it is not in 0 .. 100."""
    if not 0 <= pct <= 100:
        raise ValueError(f"--min-shared must be a percentage in 0 .. 100, got {pct:g}")
    return pct


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
