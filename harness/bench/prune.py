"""Leave out an all-core cell whose 1-thread sibling already shows it cannot compete.

More threads speed a call up at most `threads` times, and the fastest implementation at
one thread is no slower with more (when it is, `harness.runs.flags` flags it). So an
implementation whose 1-thread time, divided by the thread count, is still FAR times the
fastest 1-thread time of the same cell is at least FAR times behind at all cores too:
timing it there answers nothing the report asks. The bound is conservative (linear
scaling credited in full), it reads only unflagged 1-thread rows measured in this run
(1-thread groups run first), and the usual choice and the roofs are always timed: the
answer's speed-ups and roof ratios are measured against them.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from harness.bench.cells import Cell
from harness.core import kinds
from harness.runs.flags import load_flag

#: How far behind (at least) an all-core cell must be proven to be before it is left out.
FAR = 4.0

Row = dict[str, Any]
_SAME = ("workload", "device", "dtype", "length", "d_model", "batch", "heads", "convention")


def far_behind(cell: Cell, history: Sequence[Row]) -> Optional[str]:
    """Why `cell` need not be timed (the reason of its `skip` row), or None."""
    if cell.threads <= 1 or cell.is_roof or cell.impl in _usual(cell):
        return None
    one = [r for r in history if _one_thread_sibling(r, cell)]
    mine = [r for r in one if r["impl"] == cell.impl]
    others = [float(r["median_s"]) for r in one if not _truthy(r.get("is_roof"))]
    if not mine or not others:
        return None
    t1, best = min(float(r["median_s"]) for r in mine), min(others)
    if math.isnan(t1) or t1 / cell.threads <= FAR * best:
        return None
    return (f"far behind: {t1 * 1e3:.3g} ms at 1 thread is {t1 / best:.3g}x the fastest "
            f"({best * 1e3:.3g} ms), so even {cell.threads} threads at full speed-up leave it "
            f"over {FAR:g}x behind (--full times it)")


def _one_thread_sibling(r: Row, cell: Cell) -> bool:
    """An unflagged ok 1-thread row of the same cell (any implementation)."""
    return (r.get("status") == "ok" and int(r.get("threads", 0)) == 1 and not load_flag(r)
            and all(str(r.get(k)) == str(getattr(cell, k)) for k in _SAME)
            and not math.isnan(float(r.get("median_s", math.nan))))


def _usual(cell: Cell) -> tuple[str, ...]:
    return kinds.named(cell.kind).workload(cell.workload).usual_on(cell.device)


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")
