"""Per-cell change of one run against a base run, and the slowdown gate.

A cell is *slower* when its median rose by more than the allowed percentage and by
more than the noise between the two runs explains (harness.report.noise: how far the
cells of both runs drifted apart as a group), and a rank test on the two runs' raw
rounds says the rise is real (harness.report.gate, after asv): on a shared, noisy
machine a change of two medians alone is not evidence of anything. A cell the new run
flagged for load or for its clock is not judged (its change says more about the machine
than the code); one flagged `threads` is, since the change may have caused it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from harness.report import fmt, gate, noise
from harness.report.measures import timed
from harness.runs.identity import FIELDS as CELL

#: An implementation's cells of one dtype and thread count, over sizes: a slowdown of the code
#: shows across them, the machine's noise in one here and one there (harness.report.gate).
SERIES = tuple(f for f in CELL if f not in ("length", "d_model"))
from harness.util import units
from harness.util.exitcodes import UsageError


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
    #: raw rounds of each run (harness.bench.cells.Outcome.samples_s; empty in older runs)
    base_rounds: tuple[float, ...] = field(default=(), repr=False)
    new_rounds: tuple[float, ...] = field(default=(), repr=False)
    #: other processes' busy cores while the new run timed it (bench.csv `others_busy`)
    others_busy: float = 0.0
    #: the noise between the two runs in this cell's group (None: too few cells to measure)
    noise: Optional[noise.Noise] = field(default=None, repr=False)
    #: the median busy cores beyond those their threads left free its device and thread
    #: count's cells were timed beside in the new run (harness.report.noise.STORM_EXCESS)
    storm: float = 0.0
    #: the upper median of new/base over its series (the implementation's cells of this dtype
    #: and thread count at every size both runs timed): the ratio half of them reach
    #: (harness.report.gate)
    series: float = math.nan

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

    @property
    def unjudged(self) -> str:
        """Why the gate does not judge this cell's speed ('' when it does; harness.report.gate)."""
        if self.storm > noise.STORM_EXCESS:
            return gate.STORM
        if self.noise is None and self.others_busy > gate.BUSY_FOR_GATE:
            return gate.UNMEASURED
        return ""

    @property
    def judged(self) -> bool:
        return not self.unjudged

    def verdict(self, pct: float) -> gate.Verdict:
        if not self.judged:
            return gate.Verdict(False, math.nan, self.unjudged)
        return gate.judge(self.base_s, self.new_s, self.spread_s, self.base_rounds,
                          self.new_rounds, pct, self.noise.allowed if self.noise else 1.0,
                          self.series)

    def slower_than(self, pct: float) -> bool:
        return self.verdict(pct).slower

    def describe(self) -> str:
        p = gate.p_slower(self.base_rounds, self.new_rounds) if min(
            len(self.base_rounds), len(self.new_rounds)) >= 2 else math.nan
        evidence = (f"rank test p {p:.2g} over {len(self.new_rounds)} and {len(self.base_rounds)} "
                    "rounds" if math.isfinite(p) else f"spread {units.seconds(self.spread_s)}")
        if self.noise is not None:
            evidence += f"; noise between the runs explains up to {self.noise.allowed:.2f}x"
        if math.isfinite(self.series):
            evidence += f"; half its sizes x{self.series:.2f} or more"
        heads = f" {self.heads} heads" if self.heads != 1 else ""
        return (f"{self.workload} {self.impl} {self.length}x{self.d_model}{heads} {self.dtype} "
                f"{fmt.threads(self.threads)}: {units.seconds(self.base_s)} -> {units.seconds(self.new_s)} "
                f"({fmt.pct(self.pct)}, {evidence})")


def changes(new: pd.DataFrame, base: pd.DataFrame) -> list[Change]:
    """Every implementation cell (roofs aside) timed ok in both runs and not flagged for load
    or its clock in the new one (harness.report.gate), with the noise of its group measured
    over every such cell, roofs included (harness.report.noise)."""
    both = _both(new, base).assign(
        elements=lambda f: f["length"] * f["d_model"],
        log_ratio=lambda f: np.log(f["median_s_new"] / f["median_s_base"]))
    cells = both[~both["is_roof"] & ~both["left_out"]]
    cells = cells.assign(series=np.exp(cells.groupby(list(SERIES))["log_ratio"].transform(
        lambda ratios: np.quantile(ratios, 0.5, method="higher"))))
    noises = noise.between(both[np.isfinite(both["log_ratio"])], judged=len(cells))
    return [Change(r.workload, r.impl, r.device, int(r.length), int(r.d_model), r.dtype,
                   int(r.threads), int(r.batch), float(r.median_s_base), float(r.median_s_new),
                   float(r.iqr_s_base), float(r.iqr_s_new), int(r.heads),
                   _rounds(r.samples_s_base), _rounds(r.samples_s_new), _busy(r.others_busy),
                   noises.of(r.device, int(r.threads), int(r.elements)),
                   noises.storm(r.device, int(r.threads)), float(r.series))
            for r in cells.itertuples()]


def noise_between(new: pd.DataFrame, base: pd.DataFrame) -> list[str]:
    """One line per group of cells the gate judged against the noise between the runs."""
    seen = {c.noise.group: c.noise for c in changes(new, base) if c.noise is not None and c.judged}
    return [n.describe() for _, n in sorted(seen.items())]


def _both(new: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Cells (roofs included) timed ok in both runs side by side (suffixes _new, _base), with
    `left_out`: flagged in the new run for load or its clock (harness.report.gate)."""
    key = list(CELL)
    columns = key + ["median_s", "iqr_s", "samples_s", "is_roof", "others_busy", "cores"]

    def ok(frame: pd.DataFrame, base: bool) -> pd.DataFrame:
        rows = frame
        for name, empty in (("samples_s", ()), ("others_busy", math.nan), ("cores", math.nan)):
            if name not in rows.columns:
                rows = rows.assign(**{name: [empty] * len(rows)})
        rows = rows.assign(left_out=gate.left_out(rows) if not base else False)
        return rows.loc[rows["ok"], columns + ["left_out"]].drop_duplicates(key, keep="last")

    new_only = ["is_roof", "others_busy", "cores", "left_out"]
    return ok(new, False).merge(ok(base, True).drop(columns=new_only), on=key,
                                suffixes=("_new", "_base"))


def _busy(value: object) -> float:
    busy = float(value) if value is not None else math.nan
    return busy if math.isfinite(busy) else 0.0


def _rounds(value: object) -> tuple[float, ...]:
    return tuple(float(v) for v in value) if isinstance(value, (tuple, list)) else ()


def broken(new: pd.DataFrame, base: pd.DataFrame) -> list[str]:
    """Cells timed ok in the base run that now fail (error, timeout, invalid): the worst
    slowdown. A cell the new run skipped is not judged: the sweep skips by what it measured at
    smaller sizes (far behind the fastest, over a budget), and those cells are judged themselves;
    two runs of the same code under load skipped 8 different cells as far behind."""
    key = list(CELL)
    rows = timed(new).merge(timed(base), on=key, suffixes=("_new", "_base"))
    lost = rows[rows["ok_base"] & ~rows["ok_new"] & (rows["status_new"] != "skip")]
    return [f"{r.workload} {r.impl} {r.length}x{r.d_model} {r.dtype} {fmt.threads(r.threads)}: "
            f"ok -> {r.status_new} ({r.reason_new})" for r in lost.itertuples()]


#: Default of `--min-shared`: the part of each run's cells the other must also have timed.
MIN_SHARED_PCT = 50.0


@dataclass(frozen=True)
class Overlap:
    """How two runs line up: implementation cells in each, in both, and compared (in both and
    timed ok in the base: the gate judges each as still ok and how fast, or broken); `flagged`
    of the compared, timed ok in both but whose speed is not judged: flagged for load or its
    clock in the new run, or timed there beside other processes' load where the noise between
    the runs could not be measured."""

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
            text += (f"; {self.flagged} of the compared timed under load in the new run, their "
                     "speed not judged (flagged `load` or `clock` in bench.csv, or of a thread "
                     "count the new run timed beside more busy cores than it left free, or "
                     "beside busy cores with too few cells to measure the noise between the runs)")
        if self.flagged * 2 > self.compared:
            text += (f". SPEED MOSTLY NOT JUDGED: {self.compared - self.flagged} of "
                     f"{self.compared} cells; time the new run on a quiet machine for a speed "
                     "verdict (a broken cell still fails the gate)")
        return text


def overlap(new: pd.DataFrame, base: pd.DataFrame) -> Overlap:
    """Count the implementation cells (roofs aside) of each run, those in both, and those of
    them timed ok in the base."""
    key = list(CELL)
    rows_new, rows_base = (timed(f).drop_duplicates(key, keep="last") for f in (new, base))
    rows_new = rows_new.assign(flagged=gate.left_out(rows_new) & rows_new["ok"])
    both = rows_new[key + ["ok", "flagged"]].merge(rows_base[key + ["ok"]], on=key,
                                                   suffixes=("_new", "_base"))
    judged_out = both["ok_base"] & both["ok_new"] & both["flagged"]
    unmeasured = sum(not c.judged for c in changes(new, base))
    return Overlap(len(rows_new), len(rows_base), len(both), int(both["ok_base"].sum()),
                   int(judged_out.sum()) + unmeasured)


def require_overlap(new: pd.DataFrame, base: pd.DataFrame, what: str,
                    min_pct: float = MIN_SHARED_PCT) -> Overlap:
    """The overlap, or a ValueError when a verdict over it would mean little: no shared cell
    timed ok in the base, or fewer shared cells than `min_pct` % of either run's (a killed
    or --only run against a full one, or a different grid). `what` names the two runs."""
    check_min_shared(min_pct)
    found = overlap(new, base)
    if found.shared == 0:
        raise UsageError(f"--compare: {what} share no cell (implementation, size, dtype, "
                         "threads); nothing to compare")
    if found.compared == 0:
        raise UsageError(f"--compare: {what} share {found.shared} cell(s), none timed ok in "
                         "the base; nothing to compare against")
    if found.coverage() < min_pct:
        raise UsageError(f"--compare: {what} share too few cells: {found.shared} of "
                         f"{found.new_cells} (new) and {found.base_cells} (base), "
                         f"{found.coverage():.0f}% < --min-shared {min_pct:g}%; compare runs of "
                         "the same grid, narrow both with --only, or lower --min-shared")
    return found


def check_min_shared(pct: float) -> float:
    """--min-shared, or a ValueError naming the option when it is not in 0 .. 100."""
    if not 0 <= pct <= 100:
        raise UsageError(f"--min-shared must be a percentage in 0 .. 100, got {pct:g}")
    return pct


def check_pct(pct: float) -> float:
    """The gate's percentage, or a ValueError naming the option when it is not > 0."""
    if not pct > 0:
        raise UsageError(f"--fail-slower must be a percentage > 0, got {pct:g}")
    return pct


def slower(cells: list[Change], pct: float) -> list[Change]:
    """The cells the gate fails on, worst first."""
    check_pct(pct)
    return sorted((c for c in cells if c.slower_than(pct)), key=lambda c: -c.pct)


def as_frame(cells: list[Change]) -> pd.DataFrame:
    """The changes as rows (with `size`, `pct` and `beyond_spread`) for pivoting."""
    rows = [{**{k: v for k, v in asdict(c).items() if not k.endswith("_rounds")},
             "size": f"{c.length}x{c.d_model}", "elements": c.length * c.d_model,
             "pct": c.pct, "beyond_spread": c.beyond_spread} for c in cells]
    return pd.DataFrame(rows)
