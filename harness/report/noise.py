"""How far two runs of the same code drift apart: the compare gate's measure of its own noise.

A rank test on one cell's rounds says whether its two samples differ; it cannot say
whether they differ because of the code or because the machine was in another state
when each run timed it. On this 2-core VM both are large: two quiet default runs (of
nearby commits, most cells' code unchanged) moved their cells apart with a robust spread (1.4826 x MAD of log(new/base)) of 0.11 at one
thread and 0.21-0.23 at two (write bandwidth switches between about 20 and 36 GB/s for
minutes at a time), and two `--quick` runs under load 4 by 0.2-0.3; the rank tests agreed
with every such shift, and a gate at 10% failed dozens of cells of unchanged code.

So the gate measures the noise between the two runs it judges, from the runs themselves:
the cells timed ok in both (roofs included: harness code the change under test does not
touch) of one device, thread count and size regime (cache-resident and bandwidth-bound
cells drift differently): its roofs where it has MIN_CELLS of them, else its cells without
the implementation being judged (either way, a slowdown of the implementations that are
much of a group cannot read as the machine's drift). The drift is their median log
ratio, the spread 1.4826 x MAD; a cell is then slower only beyond

    new / base > exp(max(drift, 0) + t * spread * sqrt(1 + 1/n))

a prediction bound for one more cell of a group of n: Student's t with n - 1 degrees of
freedom at FAMILY_ALPHA over the implementations that could fail (Bonferroni, `cell_level`):
the chance that unchanged code fails is kept under FAMILY_ALPHA as if one cell could fail
its implementation, although an implementation fails only when at least two of its cells
beat their bars (harness.report.compare.decide). Counting on that second cell as
independent evidence (the level where sum P(Binomial(k, p) >= 2) = FAMILY_ALPHA: bars of
1.4x instead of 1.8x beside one busy core) failed unchanged code: the cells of one
implementation are timed in one worker process, and a process's luck moves them together
(two `--quick` runs of one commit beside a busy core: every Numba kernel of the one-thread
worker 1.38x slower, grid-numba 2.2x and 1.55x at its two sizes, its roofs 1.09x).
Much of that luck was the timing process's own state, since made one: glibc's heap
(harness.util.heap: seed-torch-stack 7.7 ms in one process, 20-25 ms in four), the
allocator's first calls (harness.bench.settle) and the load flag's 10 ms ticks
(harness.bench.contention `waited`). Beside one busy core the spread of unchanged
implementations' moves (per implementation the median log ratio; 1.4826 x MAD over them)
fell from 0.16-0.21 in two demos to 0.035-0.05 in three; in a fourth the machine itself
drifted 1.1-2x between the runs (0.17-0.20). At the two-cell level those four would have
failed the plant in two, passed unchanged code in all four, and in the drifting one failed
an unchanged implementation too (rotary-numba-cache-recycled): the level stays as it is.

A machine that was faster in the new run earns no credit; one that was slower excuses that
much. A group of fewer than MIN_CELLS other cells measures nothing, and its cells are not
judged. The price is honest: under heavy load, or on this VM's two bandwidth levels, only
large slowdowns are caught, and the gate says how large.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from harness.report.recommend import regime_of
from harness.runs import flags

#: Chance, over all implementations judged, that unchanged code fails the gate by noise alone.
FAMILY_ALPHA = 0.01
#: Fewest cells (of other implementations and roofs) a group needs for its noise to be measured.
MIN_CELLS = 8
#: Busy cores beyond those its threads leave free that the median CPU cell of a thread count may
#: have been timed beside before none of them is judged (harness.report.gate): one busy core of
#: two leaves a one-thread cell about 0.0-0.1; under load 4, 0.4-0.6.
STORM_EXCESS = 0.25
#: MAD to the standard deviation of a normal distribution.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Noise:
    """Drift and spread of log(new/base) over one group's cells, and the one-sided level per
    cell the gate judges at (`cell_level`)."""

    group: str
    cells: int
    drift: float
    spread: float
    level: float

    @property
    def allowed(self) -> float:
        """The ratio new/base the noise between the runs explains for one more cell."""
        from scipy.stats import t

        quantile = float(t.ppf(1.0 - self.level, self.cells - 1))
        return math.exp(max(self.drift, 0.0)
                        + quantile * self.spread * math.sqrt(1.0 + 1.0 / self.cells))

    def describe(self) -> str:
        return (f"{self.group}: {self.cells} cells moved by x{math.exp(self.drift):.2f} "
                f"(median), spread {self.spread:.2f} in log: slower only beyond "
                f"{self.allowed:.2f}x")


def cell_level(cells_per_implementation: Sequence[int]) -> float:
    """The one-sided level per cell: FAMILY_ALPHA over the implementations that could fail
    (two cells or more: one alone is a lone rise), as if one cell sufficed."""
    return FAMILY_ALPHA / max(1, sum(k >= 2 for k in cells_per_implementation))


def thread_group(device: str, threads: int) -> str:
    return f"{device} {threads} thread{'s' if threads != 1 else ''}"


def group_of(device: str, threads: int, elements: int) -> str:
    """The group a cell's noise is measured in: its device, thread count and size regime."""
    return f"{thread_group(device, threads)}, {regime_of(elements).name}"


@dataclass
class Between:
    """The noise between two runs, per group, measured for each implementation without its own
    cells; and per count of cores a CPU cell's work needed the new run's median busy cores
    beyond the free ones."""

    #: group, impl, is_roof and log_ratio of every cell timed ok in both runs, not left out
    kept: pd.DataFrame
    level: float
    excess: Mapping[str, float]
    _found: dict[tuple[str, str], Optional[Noise]] = field(default_factory=dict, repr=False)

    def of(self, group: str, impl: str) -> Optional[Noise]:
        """The group's noise from its roofs where it has MIN_CELLS of them (the controls: code
        the change under test does not touch, so a change to every implementation of a backend
        cannot read as drift), else from its cells without `impl`'s; None with fewer."""
        key = (group, impl)
        if key not in self._found:
            rows = self.kept[self.kept["group"] == group]
            roofs = rows[rows["is_roof"]]
            rows = roofs if len(roofs) >= MIN_CELLS else rows[rows["impl"] != impl]
            self._found[key] = (measure(group, rows["log_ratio"].to_numpy(float), self.level)
                                if len(rows) >= MIN_CELLS else None)
        return self._found[key]

    def storm(self, device: str, needed: float) -> float:
        """The new run's median busy cores beyond the free ones, over the CPU cells whose work
        needed this many cores."""
        return self.excess.get(thread_group(device, int(needed)), 0.0) if device == "cpu" else 0.0


def between(both: pd.DataFrame, level: float) -> Between:
    """The noise between two runs from `both` (columns impl, device, threads, elements,
    log_ratio, left_out, and the new run's others_busy, cores and threads_ran: every cell timed
    ok in both); `level` is the one-sided level per cell (`cell_level`). The storm is
    measured per count of cores the cells' work needed (harness.runs.flags.needed: a NumPy
    cell "at 2 threads" beside one busy core of two had its core, as a 1-thread cell had)."""
    both = both[np.isfinite(both["log_ratio"])]
    groups = [group_of(r.device, int(r.threads), int(r.elements)) for r in both.itertuples()]
    kept = both.assign(group=groups)[~both["left_out"].astype(bool)]
    kept = kept[["group", "impl", "is_roof", "log_ratio"]].astype({"is_roof": bool})
    needed = [flags.needed(row) for row in both.to_dict("records")]
    excess = (pd.to_numeric(both["others_busy"], errors="coerce")
              - (pd.to_numeric(both["cores"], errors="coerce") - needed).clip(lower=0))
    by_cores = [thread_group(d, int(n)) for d, n in zip(both["device"], needed)]
    median = excess.groupby(by_cores).median() if len(both) else pd.Series(dtype=float)
    return Between(kept, level, {str(k): float(v) for k, v in median.items() if np.isfinite(v)})


def measure(group: str, log_ratios: np.ndarray, level: float) -> Noise:
    """Median and 1.4826 x MAD of one group's log ratios."""
    drift = float(np.median(log_ratios))
    spread = MAD_TO_SIGMA * float(np.median(np.abs(log_ratios - drift)))
    return Noise(group, len(log_ratios), drift, spread, level)
