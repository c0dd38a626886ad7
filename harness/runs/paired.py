"""`paired.csv`: each workload's best and its roof timed in alternating rounds (harness.bench.paired).

One row per implementation and `measure`: "call" (its timed calls against the roofs, each
round a few calls of one callable) or "first call" (each round a fresh build's first call,
allocating its output, against allocate-and-fill roofs). Then the output (workload, kind,
dtype, length, d_model, ...),
`impl`, the `roofs` it was set against, `status` (ok, error, timeout, clock) and `reason`,
`impl_s` and `roof_s` (medians over rounds, the roof's the fastest of its roofs in each round),
`ratio` (median over rounds of impl / fastest roof of the same round) with `ratio_p25` and
`ratio_p75`, `rounds`, `sweep_ratio` (the same ratio from the sweep's medians), `worker_s`,
the load columns around the rounds (harness.bench.contention) and `flags` (`load: ...` where
other processes held cores its threads needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

FILENAME = "paired.csv"
MEASURES = ("call", "first call")


def read(run_dir: Path) -> Optional[pd.DataFrame]:
    """A run's paired.csv, or None where the step did not run (or wrote no row)."""
    path = Path(run_dir) / FILENAME
    try:
        return pd.read_csv(path) if path.is_file() else None
    except pd.errors.EmptyDataError:
        return None


def of(paired: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The rows of one measure (a file written before first calls were paired: all calls)."""
    if "measure" not in paired:
        return paired if measure == MEASURES[0] else paired.iloc[0:0]
    return paired[paired["measure"] == measure]
