"""Accuracy vs speed: each implementation's float32 error far out against its time at one size.

The reference size is 8192 x 1024 (the size of the speed targets) when the run
has it, else the largest size at which at least half of the implementations
ran. An implementation is on the Pareto frontier when no other correct one is
at least as fast *and* at least as accurate (and strictly better in one); only
implementations verify checked as far out as the others are compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import pandas as pd

from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.report import fmt
from harness.report.accuracy import Accuracy, long_accuracy
from harness.report.measures import speedup, timed
from harness.runs.verdicts import verdict

REFERENCE = (8192, 1024)
ACCURACY_DTYPE = "float32"


@dataclass(frozen=True)
class Point:
    """One implementation at the reference size and one thread setting."""

    impl: str
    device: str
    convention: str
    threads: int
    median_s: float
    roof_ratio: float
    speedups: tuple[tuple[str, float], ...]
    accuracy: Optional[Accuracy]
    verdict: Optional[str]
    excluded: Optional[str] = None
    frontier: bool = False


@dataclass(frozen=True)
class Tradeoff:
    """The points of one workload at its reference size."""

    workload: str
    length: int
    d_model: int
    dtype: str
    points: tuple[Point, ...]

    @property
    def size(self) -> str:
        return f"{self.length}x{self.d_model} {self.dtype}"


def reference_size(bench: pd.DataFrame, workload: str) -> Optional[tuple[int, int, str]]:
    """(length, d_model, dtype) to compare implementations of `workload` at, or None."""
    rows = timed(bench)
    rows = rows[rows["ok"] & (rows["workload"] == workload)]
    if rows.empty:
        return None
    dtypes = set(rows["dtype"])
    dtype = ACCURACY_DTYPE if ACCURACY_DTYPE in dtypes else sorted(dtypes)[0]
    rows = rows[rows["dtype"] == dtype]
    counts = rows.groupby(["length", "d_model"])["impl"].nunique()
    if REFERENCE in counts.index:
        return (*REFERENCE, dtype)
    common = counts[counts >= math.ceil(counts.max() / 2)]
    length, d_model = max(common.index, key=lambda k: (k[0] * k[1], k))
    return int(length), int(d_model), dtype


def tradeoff(bench: pd.DataFrame, verify: Optional[pd.DataFrame], workload: str,
             baselines: Sequence[str]) -> Optional[Tradeoff]:
    """Every implementation timed at the reference size, with speedups and frontier flags."""
    where = reference_size(bench, workload)
    if where is None:
        return None
    length, d_model, dtype = where
    ratios = {name: speedup(bench, name) for name in baselines}
    rows = timed(bench)
    rows = rows[rows["ok"] & (rows["workload"] == workload) & (rows["length"] == length)
                & (rows["d_model"] == d_model) & (rows["dtype"] == dtype)]
    points = [Point(r.impl, r.device, r.convention, int(r.threads), float(r.median_s),
                    float(r.roof_ratio), tuple((name, float(ratios[name][i])) for name in baselines),
                    long_accuracy(verify, r.impl, ACCURACY_DTYPE), verdict(verify, r.impl))
              for i, r in zip(rows.index, rows.itertuples())]
    return Tradeoff(workload, length, d_model, dtype, tuple(_mark_frontier(_exclude(points))))


def pareto(pairs: Sequence[tuple[float, float]]) -> list[bool]:
    """For (time, error) pairs, whether each is dominated by no other (lower is better in both)."""
    def dominated(a: tuple[float, float]) -> bool:
        return any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in pairs)
    return [not dominated(p) for p in pairs]


def _exclude(points: list[Point]) -> list[Point]:
    """Say why a point may not be on the frontier: wrong, unverified, or not checked as far out.

    Errors grow with position, so an implementation verify only ran to p = 299 (a
    convention the long cases do not cover) cannot be compared with one run to 10^6.
    """
    reach = min(LONG_POSITIONS, max((p.accuracy.position for p in points if p.accuracy), default=0))

    def why(p: Point) -> Optional[str]:
        if p.verdict is not None:
            return p.verdict
        if p.accuracy is None or not math.isfinite(p.accuracy.max_abs_err):
            return "no float32 error in verify.csv"
        if p.accuracy.position < reach:
            return f"verify reached only p = {fmt.count(p.accuracy.position)}"
        return None
    return [replace(p, excluded=why(p)) for p in points]


def _mark_frontier(points: list[Point]) -> list[Point]:
    """Flag frontier points within each thread setting, among those not excluded."""
    marked = list(points)
    for threads in {p.threads for p in points}:
        idx = [i for i, p in enumerate(points) if p.threads == threads and p.excluded is None]
        flags = pareto([(points[i].median_s, points[i].accuracy.max_abs_err) for i in idx])
        for i, flag in zip(idx, flags):
            marked[i] = replace(points[i], frontier=flag)
    return sorted(marked, key=lambda p: (p.threads, p.median_s))
