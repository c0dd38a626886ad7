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
from typing import Mapping, Optional

import numpy as np
import pandas as pd

from harness.report import fmt, gate, noise
from harness.report.measures import timed
from harness.runs import flags as flag_rules
from harness.runs.identity import FIELDS as CELL
from harness.util import units
from harness.util.exitcodes import UsageError

#: An implementation in one dtype, over sizes and thread counts: a slowdown of the code shows
#: across its cells, the machine's noise in one here and one there (harness.report.gate).
#: Pairs cells by the attributes Change has (a GPU cell's timing mode is in its key, not here).
IMPLEMENTATION = ("workload", "impl", "device", "dtype", "batch", "heads")


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
    #: the noise between the two runs in this cell's group, its own implementation left out
    #: (None: too few other cells to measure it)
    noise: Optional[noise.Noise] = field(default=None, repr=False)
    #: the median busy cores beyond those they left free that the new run's CPU cells needing
    #: as many cores as this one were timed beside (harness.report.noise.STORM_EXCESS)
    storm: float = 0.0

    @property
    def pct(self) -> float:
        """Change of the median in percent of the base (positive: slower)."""
        return 100.0 * (self.new_s - self.base_s) / self.base_s

    @property
    def spread_s(self) -> float:
        return self.base_iqr_s + self.new_iqr_s

    @property
    def unjudged(self) -> str:
        """Why the gate does not judge this cell's speed ('' when it does; harness.report.gate)."""
        if self.storm > noise.STORM_EXCESS:
            return gate.STORM
        if self.noise is None:
            return gate.UNMEASURED
        return ""

    @property
    def judged(self) -> bool:
        return not self.unjudged

    def verdict(self, pct: float) -> gate.Verdict:
        if not self.judged:
            return gate.Verdict(False, math.nan, self.unjudged)
        return gate.judge(self.base_s, self.new_s, self.spread_s, self.base_rounds,
                          self.new_rounds, pct, self.noise.allowed if self.noise else 1.0)

    def slower_than(self, pct: float) -> bool:
        return self.verdict(pct).slower

    def describe(self) -> str:
        p = gate.p_slower(self.base_rounds, self.new_rounds) if min(
            len(self.base_rounds), len(self.new_rounds)) >= 2 else math.nan
        evidence = (f"rank test p {p:.2g} over {len(self.new_rounds)} and {len(self.base_rounds)} "
                    "rounds" if math.isfinite(p) else f"spread {units.seconds(self.spread_s)}")
        if self.noise is not None:
            evidence += f"; noise between the runs explains up to {self.noise.allowed:.2f}x"
        heads = f" {self.heads} heads" if self.heads != 1 else ""
        return (f"{self.workload} {self.impl} {self.length}x{self.d_model}{heads} {self.dtype} "
                f"{fmt.threads(self.threads)}: {units.seconds(self.base_s)} -> {units.seconds(self.new_s)} "
                f"({fmt.pct(self.pct)}, {evidence})")


def changes(new: pd.DataFrame, base: pd.DataFrame) -> list[Change]:
    """Every implementation cell (roofs aside) timed ok in both runs and not flagged for load
    or its clock in the new one (harness.report.gate), with the noise of its group measured
    over the other cells both runs timed, roofs included (harness.report.noise)."""
    both = _both(new, base).assign(
        elements=lambda f: f["length"] * f["d_model"],
        log_ratio=lambda f: np.log(f["median_s_new"] / f["median_s_base"]))
    cells = both[~both["is_roof"] & ~both["left_out"]]
    per_impl = cells.groupby(list(IMPLEMENTATION)).size()
    noises = noise.between(both, level=noise.cell_level(per_impl.tolist()))
    return [Change(r.workload, r.impl, r.device, int(r.length), int(r.d_model), r.dtype,
                   int(r.threads), int(r.batch), float(r.median_s_base), float(r.median_s_new),
                   float(r.iqr_s_base), float(r.iqr_s_new), int(r.heads),
                   _rounds(r.samples_s_base), _rounds(r.samples_s_new), _busy(r.others_busy),
                   noises.of(noise.group_of(r.device, int(r.threads), int(r.elements)), r.impl),
                   noises.storm(r.device, flag_rules.needed(r._asdict())))
            for r in cells.itertuples()]


def _both(new: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Cells (roofs included) timed ok in both runs side by side (suffixes _new, _base), with
    `left_out`: flagged in the new run for load or its clock (harness.report.gate)."""
    key = list(CELL)
    columns = key + ["median_s", "iqr_s", "samples_s", "is_roof", "others_busy", "cores",
                     "threads_ran"]

    def ok(frame: pd.DataFrame, base: bool) -> pd.DataFrame:
        rows = frame
        for name, empty in (("samples_s", ()), ("others_busy", math.nan), ("cores", math.nan),
                            ("threads_ran", math.nan)):
            if name not in rows.columns:
                rows = rows.assign(**{name: [empty] * len(rows)})
        rows = rows.assign(left_out=gate.left_out(rows) if not base else False)
        return rows.loc[rows["ok"], columns + ["left_out"]].drop_duplicates(key, keep="last")

    new_only = ["is_roof", "others_busy", "cores", "threads_ran", "left_out"]
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
    clock in the new run, or not judged by the gate's other rules (Change.unjudged)."""

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
            text += (f"; {self.flagged} of the compared not judged for speed (flagged `load` or "
                     "`clock` in the new run's bench.csv, or timed under load, or with too few "
                     "other cells to measure the noise between the runs)")
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
    not_judged = sum(not c.judged for c in changes(new, base))
    return Overlap(len(rows_new), len(rows_base), len(both), int(both["ok_base"].sum()),
                   int(judged_out.sum()) + not_judged)


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


@dataclass(frozen=True)
class Decision:
    """What the gate made of the compared cells at one percentage."""

    #: cells slower beyond the bar, their implementation's other cells agreeing (these fail)
    slower: tuple[Change, ...]
    #: cells slower beyond the bar alone: their implementation's other cells did not move
    lone: tuple[Change, ...]
    #: cells judged; of them, risen past the percentage but within the noise or the rank test
    judged: int
    excused: int
    #: cells not judged, by why
    unjudged: Mapping[str, int]
    #: the noise each judged group was measured with (one line per group)
    noises: tuple[str, ...]

    def describe(self, pct: float) -> list[str]:
        lines = [f"judged {self.judged} cell(s) against the noise between the runs"]
        lines += [f"  noise between the runs, {n}" for n in self.noises]
        if self.excused:
            lines.append(f"  {self.excused} rose past {pct:g}% within that noise or without "
                         "a significant rank test: not slower")
        lines += [f"  lone rise, not failing (its implementation's other cells did not move): "
                  f"{c.describe()}" for c in self.lone]
        lines += [f"  not judged: {n} cell(s), {why}" for why, n in self.unjudged.items()]
        return lines


def decide(cells: list[Change], pct: float) -> Decision:
    """The gate's decision: a cell is slower when it beats its bar (Change.verdict) and so does
    at least half of its implementation's other judged cells of that dtype at its thread count
    (other sizes), or where it has none there, at the other thread counts; one that beats it
    with them not agreeing, or with no other cell to agree, is a lone rise, named and not
    failed (harness.report.gate). `pct` 0 asks for every slowdown beyond the noise (the
    report's change tables); the command line's --fail-slower is over 0 (check_pct)."""
    judged = [c for c in cells if c.judged]
    beats = {id(c): c.slower_than(pct) for c in judged}
    family: dict[tuple, list[Change]] = {}
    for c in judged:
        family.setdefault(tuple(getattr(c, f) for f in IMPLEMENTATION), []).append(c)

    def agreed(c: Change) -> bool:
        others = [o for o in family[tuple(getattr(c, f) for f in IMPLEMENTATION)] if o is not c]
        others = [o for o in others if o.threads == c.threads] or others
        return bool(others) and 2 * sum(beats[id(o)] for o in others) >= len(others)

    risen = [c for c in judged if beats[id(c)]]
    slow = sorted((c for c in risen if agreed(c)), key=lambda c: -c.pct)
    unjudged: dict[str, int] = {}
    for c in cells:
        if not c.judged:
            unjudged[c.unjudged] = unjudged.get(c.unjudged, 0) + 1
    noises = {c.noise.group: c.noise.describe() for c in judged if c.noise is not None}
    return Decision(tuple(slow), tuple(c for c in risen if not agreed(c)), len(judged),
                    sum(c.new_s > (1 + pct / 100) * c.base_s and not beats[id(c)] for c in judged),
                    unjudged, tuple(v for _, v in sorted(noises.items())))


def slower(cells: list[Change], pct: float) -> list[Change]:
    """The cells the gate fails on at --fail-slower `pct` (> 0), worst first."""
    return list(decide(cells, check_pct(pct)).slower)


def as_frame(cells: list[Change], decision: Decision) -> pd.DataFrame:
    """The changes as rows for pivoting, with `size`, `pct`, `judged` and `beyond_noise`: slower
    than the noise between the runs explains, the rank test agreeing (in `decision`, made at
    0%: failed or a lone rise)."""
    beyond = {id(c) for c in (*decision.slower, *decision.lone)}
    rows = [{**{k: v for k, v in asdict(c).items() if not k.endswith("_rounds") and k != "noise"},
             "size": f"{c.length}x{c.d_model}", "elements": c.length * c.d_model,
             "pct": c.pct, "judged": c.judged, "beyond_noise": id(c) in beyond}
            for c in cells]
    return pd.DataFrame(rows)
