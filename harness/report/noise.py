"""How far two runs of the same code drift apart: the compare gate's measure of its own noise.

A rank test on one cell's rounds says whether its two samples differ; it cannot say
whether they differ because of the code or because the machine was in another state
when each run timed it. On this 2-core VM both are large: two quiet default runs moved
their cells apart with a robust spread (1.4826 x MAD of log(new/base)) of 0.11 at one
thread and 0.21-0.23 at two (write bandwidth switches between about 20 and 36 GB/s for
minutes at a time), and two `--quick` runs under load 4 by 0.2-0.3; the rank tests agreed
with every such shift, and a gate at 10% failed dozens of cells of unchanged code.

So the gate measures the noise between the two runs it judges, from the runs themselves:
every cell timed ok in both (roofs included: harness code the change under test does not
touch), grouped by device, thread count and size regime (cache-resident and
bandwidth-bound cells drift differently). A group's drift is the median log ratio, its
spread 1.4826 x MAD: both robust to a minority of cells the change did move. A cell is
then called slower only beyond what the noise explains:

    new / base > exp(max(drift, 0) + z * spread)

with z the normal quantile that keeps the chance of failing unchanged code under
FAMILY_ALPHA over all the cells judged (Bonferroni). A machine that was faster in the new
run earns no credit (a negative drift is not subtracted); one that was slower excuses
that much. The price is honest: under heavy load only large slowdowns are caught, and the
gate prints how large.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Mapping, Optional

import numpy as np
import pandas as pd

from harness.report.recommend import regime_of

#: Chance, over all cells judged, that unchanged code fails the gate by noise alone.
FAMILY_ALPHA = 0.01
#: Fewest cells a group needs for its drift and spread to be measured (else its thread
#: count's, else none: see harness.report.gate.left_out).
MIN_CELLS = 8
#: Busy cores beyond those its threads leave free that the median cell of a device and thread
#: count may have been timed beside before none of them is judged (harness.report.gate): one
#: busy core of two leaves a one-thread cell about 0.0-0.1; under load 4, 0.4-0.6.
STORM_EXCESS = 0.25
#: MAD to the standard deviation of a normal distribution.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Noise:
    """Drift and spread of log(new/base) over one group of cells, and how many cells the gate
    judges in all (which sets z)."""

    group: str
    cells: int
    drift: float
    spread: float
    judged: int

    @property
    def z(self) -> float:
        return NormalDist().inv_cdf(1.0 - FAMILY_ALPHA / max(self.judged, 1))

    @property
    def allowed(self) -> float:
        """The ratio new/base the noise between the runs explains in this group."""
        return math.exp(max(self.drift, 0.0) + self.z * self.spread)

    def describe(self) -> str:
        return (f"{self.group}: {self.cells} cells moved by x{math.exp(self.drift):.2f} "
                f"(median), spread {self.spread:.2f} in log: slower only beyond "
                f"{self.allowed:.2f}x")


def group_of(device: str, threads: int, elements: int) -> tuple[str, str]:
    """(the regime's group, the thread count's group) a cell's noise is measured in."""
    where = f"{device} {threads} thread{'s' if threads != 1 else ''}"
    return f"{where}, {regime_of(elements).name}", where


@dataclass(frozen=True)
class Between:
    """The noise of every group two runs share enough cells in."""

    groups: Mapping[str, Noise]
    #: by the thread count's group: the median cores other processes kept busy beyond those
    #: the cells' threads left free, in the new run
    excess: Mapping[str, float]

    def storm(self, device: str, threads: int) -> float:
        """The median busy cores beyond the free ones at this device and thread count."""
        return self.excess.get(group_of(device, threads, 0)[1], 0.0)

    def of(self, device: str, threads: int, elements: int) -> Optional[Noise]:
        """The noise of the cell's regime group, else of its thread count, else None."""
        fine, coarse = group_of(device, threads, elements)
        return self.groups.get(fine) or self.groups.get(coarse)

    def describe(self) -> list[str]:
        return [n.describe() for n in self.groups.values()]


def between(both: pd.DataFrame, judged: int) -> Between:
    """The noise of each group of `both` (columns device, threads, elements, log_ratio,
    left_out, and the new run's others_busy and cores: every cell timed ok in both runs) with
    at least MIN_CELLS cells not left out; `judged` is how many cells the gate decides on."""
    if both.empty:
        return Between({}, {})
    fine, coarse = (list(names) for names in zip(*(
        group_of(r.device, int(r.threads), int(r.elements)) for r in both.itertuples())))
    kept = ~both["left_out"].to_numpy(bool)
    groups: dict[str, Noise] = {}
    for names in (fine, coarse):
        for name, rows in both[kept].groupby(np.asarray(names)[kept], sort=True):
            if len(rows) >= MIN_CELLS:
                groups[name] = measure(name, rows["log_ratio"].to_numpy(float), judged)
    excess = (pd.to_numeric(both["others_busy"], errors="coerce")
              - (pd.to_numeric(both["cores"], errors="coerce") - both["threads"]).clip(lower=0))
    median = excess.groupby(coarse).median()
    return Between(groups, {str(k): float(v) for k, v in median.items() if np.isfinite(v)})


def measure(group: str, log_ratios: np.ndarray, judged: int) -> Noise:
    """Median and 1.4826 x MAD of one group's log ratios."""
    drift = float(np.median(log_ratios))
    spread = MAD_TO_SIGMA * float(np.median(np.abs(log_ratios - drift)))
    return Noise(group, len(log_ratios), drift, spread, judged)
