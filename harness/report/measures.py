"""Per-cell measures derived from bench.csv: speedup against a baseline, noise, grouping.

Ratios are always taken between rows of the *same run*: the machines are
shared and noisy, so absolute times across runs are not comparable, while
two implementations timed minutes apart on one machine are.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

from harness.core import kinds
from harness.runs.identity import SIBLING, TASK
from harness.util import units

#: The default baseline of each workload: what code starts from on the CPU, as each workload
#: says (`Workload.usual`): the seed NumPy table and the NumPy `x + PE`; for the other kinds,
#: the way model code does it (transformers' rotary embedding and its unfused apply, MAE's
#: NumPy grid, diffusers' get_timestep_embedding).
DEFAULT_BASELINES: Mapping[str, str] = {
    w.name: w.usual_on("cpu")[0] for k in kinds.KINDS.values() for w in k.workloads if w.usual_on("cpu")}
#: The usual choice on each device, in order of preference (the first one timed in the dtype):
#: (workload, device) -> impls, from each workload's `usual`.
DEVICE_BASELINES: Mapping[tuple[str, str], tuple[str, ...]] = {
    (w.name, device): names for k in kinds.KINDS.values() for w in k.workloads for device, names in w.usual}
#: Seed 000 (torch stack-flatten): the reference point of the speed targets.
SEED_000 = "seed-torch-stack"
SEED_WORKLOAD = "table"          # what seed 000 builds: the report never imports an implementation
#: IQR/median above which a cell is flagged as noisy (docs/design.md, measurement rules).


def workload_rank(workload: str) -> tuple[int, str]:
    """Sort key of workloads: each one's `order` (the 1-D table first, what the harness is
    about), then by name; a workload no kind knows (an old run's) last."""
    try:
        return kinds.workload(workload).order, workload
    except ValueError:
        return 1 << 30, workload


#: The order of workloads in a report (each workload's `order`).
WORKLOAD_ORDER = tuple(sorted(kinds.all_workloads(), key=workload_rank))


def baselines(frame: pd.DataFrame, named: str) -> dict[str, str]:
    """The baseline of each workload: `named` where it was timed, else the workload's default,
    else the usual choice of a device that was timed (a GPU-only run has no NumPy seed)."""
    impls_of = frame.groupby("workload")["impl"].agg(set)
    out = {}
    for w, impls in impls_of.items():
        candidates = [named, DEFAULT_BASELINES.get(w, named),
                      *(b for (wl, _), bs in DEVICE_BASELINES.items() if wl == w for b in bs)]
        out[w] = next((c for c in candidates if c in impls), named)
    return out


def usual(frame: pd.DataFrame, workload: str, device: str, dtype: str, named: str) -> str | None:
    """The usual choice for `workload` on `device` in `dtype`: `named` (--baseline) where it
    was timed there, else the first of the device's defaults (`DEVICE_BASELINES`) timed, else
    None."""
    rows = frame[(frame["workload"] == workload) & (frame["device"] == device)
                 & (frame["dtype"] == dtype) & frame["ok"]]
    timed_here = set(rows["impl"])
    for candidate in (named, *DEVICE_BASELINES.get((workload, device), ())):
        if candidate in timed_here:
            return candidate
    return None


def regime_rows(frame: pd.DataFrame, workload: str, regime, dtype: str, device: str,
                threads: int) -> pd.DataFrame:
    """The rows of one recommendation group: sizes with regime.lo <= elements < regime.hi."""
    return frame[(frame["workload"] == workload) & (frame["dtype"] == dtype)
                 & (frame["device"] == device) & (frame["threads"] == threads)
                 & (frame["elements"] >= regime.lo) & (frame["elements"] < regime.hi)]


def speedup(frame: pd.DataFrame, baseline: str) -> pd.Series:
    """baseline median / row median on the same task (NaN where either is missing or not ok)."""
    ok = frame[frame["ok"] & (frame["impl"] == baseline)]
    base = ok.drop_duplicates(list(TASK)).set_index(list(TASK))["median_s"]
    keys = pd.MultiIndex.from_frame(frame[list(TASK)])
    values = base.reindex(keys).to_numpy() / frame["median_s"].to_numpy()
    return pd.Series(np.where(frame["ok"], values, np.nan), index=frame.index)


def baseline_speedup(frame: pd.DataFrame, named: Mapping[str, str]) -> pd.Series:
    """Each row's speedup over the baseline of its own workload (`named`: workload -> impl)."""
    out = pd.Series(np.nan, index=frame.index)
    for workload, baseline in named.items():
        mine = frame["workload"] == workload
        out[mine] = speedup(frame, baseline)[mine]
    return out


def spread(frame: pd.DataFrame) -> pd.Series:
    """IQR / median of each ok row (NaN otherwise)."""
    return (frame["iqr_s"] / frame["median_s"]).where(frame["ok"])


def noisy(frame: pd.DataFrame) -> pd.Series:
    return spread(frame) > units.NOISY_IQR


def timed(frame: pd.DataFrame) -> pd.DataFrame:
    """Implementation rows only (no roofs)."""
    return frame[~frame["is_roof"]]


#: The order dtypes are shown in: by width.
DTYPE_ORDER = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}


def dtype_order(dtypes: Iterable[str]) -> list[str]:
    """The distinct `dtypes` by width (unknown ones last, by name)."""
    return sorted(set(dtypes), key=lambda d: (DTYPE_ORDER.get(d, 9), d))


def groups(frame: pd.DataFrame) -> Iterator[tuple[str, int, pd.DataFrame]]:
    """(dtype, threads, rows) in a stable order: dtypes by width, then threads."""
    keys = sorted(frame.groupby(["dtype", "threads"]).groups,
                  key=lambda k: (DTYPE_ORDER.get(k[0], 9), k[0], k[1]))
    for dtype, threads in keys:
        yield dtype, threads, frame[(frame["dtype"] == dtype) & (frame["threads"] == threads)]


def thread_range(frame: pd.DataFrame) -> tuple[int, int] | None:
    """(fewest, most) threads timed, or None when the run used a single setting."""
    threads = frame.loc[frame["ok"], "threads"]
    return (int(threads.min()), int(threads.max())) if threads.nunique() > 1 else None


def thread_scaling(frame: pd.DataFrame) -> pd.DataFrame:
    """Per implementation and cell: median at the fewest threads / median at the most."""
    span = thread_range(frame)
    ok = frame[frame["ok"]]
    if span is None:
        return pd.DataFrame(columns=["impl", "dtype", "length", "d_model", "elements", "scaling"])
    lo, hi = span
    key = [*SIBLING, "elements"]
    few = ok[ok["threads"] == lo].set_index(key)["median_s"]
    many = ok[ok["threads"] == hi].set_index(key)["median_s"]
    return (few / many).dropna().rename("scaling").reset_index()
