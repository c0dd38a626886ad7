"""Skip cells that would not fit their budget, predicted from the same implementation's smaller cells.

Time per call is modelled as `a + b * elements` (elements written: batch x
length x d_model), fitted through the two largest smaller cells already
measured for the same implementation, workload, device and dtype (same thread
count preferred). With one such cell the model is proportional, an upper bound
that only errs towards skipping the Python loops. A cell timed under load is no
evidence. Without any, the cell runs: its timeout is the safety net. A cell whose smaller sibling timed out is
skipped outright.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from harness.bench.cells import Cell
from harness.bench.settings import Limits, Timing
from harness.runs.flags import load_flag

#: Starts every reason for a cell the whole-sweep budget (--budget-s) left out; --resume runs them.
BUDGET_PREFIX = "sweep budget"

Row = dict[str, Any]


@dataclass(frozen=True)
class Prediction:
    """Predicted seconds per call and for the whole cell, and what they were predicted from."""

    call_s: float
    cell_s: float
    basis: str


def _elements(row: Row) -> int:
    return int(row["batch"]) * int(row["length"]) * int(row["d_model"])


def _siblings(cell: Cell, history: Sequence[Row], status: str) -> list[Row]:
    """Smaller rows of the same implementation/workload/device/dtype with `status`, never one
    flagged for load: under one busy core a 2-thread median came out 27x its 1-thread one, and
    the larger cells predicted from it were skipped as over budget (and their fallbacks too)."""
    rows = [r for r in history if r["impl"] == cell.impl and r["workload"] == cell.workload
            and r["device"] == cell.device and r["dtype"] == cell.dtype
            and r["status"] == status and _elements(r) <= cell.elements and r["key"] != cell.key
            and not load_flag(r)]
    same_threads = [r for r in rows if r["threads"] == cell.threads]
    return same_threads or rows


def predict(cell: Cell, history: Sequence[Row], timing: Timing) -> Optional[Prediction]:
    """The cell's cost from its smaller siblings, or None when it has none yet."""
    by_size: dict[int, Row] = {}
    for r in _siblings(cell, history, "ok"):
        if not math.isnan(r["median_s"]):
            size = _elements(r)
            if size not in by_size or r["median_s"] > by_size[size]["median_s"]:
                by_size[size] = r          # same size, two shapes: the slower one
    if not by_size:
        return None
    sizes = sorted(by_size)[-2:]
    big = by_size[sizes[-1]]
    t_big, n_big = big["median_s"], _elements(big)
    if len(sizes) == 2:
        small = by_size[sizes[0]]
        slope = max(0.0, (t_big - small["median_s"]) / (n_big - _elements(small)))
        call_s = t_big + slope * (cell.elements - n_big)
    else:
        call_s = t_big * cell.elements / n_big
    basis = f"{big['length']}x{big['d_model']} {big['threads']}t: {t_big * 1e3:.3g} ms"
    return Prediction(call_s, timing.cell_seconds(call_s), basis)


def skip_reason(cell: Cell, history: Sequence[Row], timing: Timing, limits: Limits,
                now: Optional[float] = None) -> Optional[str]:
    """Why the cell should not run (over a budget, a smaller one timed out), or None."""
    timed_out = _siblings(cell, history, "timeout")
    if timed_out:
        r = timed_out[0]
        return f"a smaller cell ({r['length']}x{r['d_model']}, {r['threads']}t) timed out"
    guess = predict(cell, history, timing)
    if guess is not None:
        for limit, option in ((limits.cell_budget_s, "--cell-budget-s"),
                              (limits.timeout_s, "--timeout-s")):
            if guess.cell_s > limit:
                return (f"predicted {guess.cell_s:.3g} s for this cell ({guess.call_s:.3g} s per "
                        f"call, from {guess.basis}) > {option} {limit:g}")
    if limits.deadline is not None:
        left = limits.deadline - (time.time() if now is None else now)
        need = guess.cell_s if guess is not None else timing.max_time
        if need > left:
            return (f"{BUDGET_PREFIX}: needs ~{need:.3g} s, {max(left, 0.0):.3g} s left "
                    f"of --budget-s {limits.budget_s:g}")
    return None
