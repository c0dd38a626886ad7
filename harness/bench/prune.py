"""Leave out a cell that an earlier measurement of the same run shows cannot compete.

Two proofs, each from unflagged rows measured earlier in this run (the usual choice and the
roofs are always timed: the answer's speed-ups and roof ratios are measured against them):

- **At one thread** (`far_behind`), for an all-core cell, below.
- **At a smaller size** (`behind_at_smaller`): an implementation over FAR_SMALLER times the
  fastest at the next smaller landmark of the same cell is not timed at the larger one. The
  bound is wider than FAR because a gap can narrow with size (the fastest becomes memory-bound
  while a slow one stays compute-bound). Cells of a worker run smallest size first, every
  implementation of it (harness.bench.sweep.groups), so the smaller size is there to read.

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
#: How far behind at the next smaller size before a larger one is left out.
FAR_SMALLER = 8.0

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


def behind_at_smaller(cell: Cell, history: Sequence[Row]) -> Optional[str]:
    """Why `cell` need not be timed, proven at the next smaller size measured here, or None."""
    if cell.is_roof or cell.impl in _usual(cell):
        return None
    size = cell.length * cell.d_model
    smaller: dict[int, list[Row]] = {}
    for r in history:
        if _same_but_size(r, cell) and int(r["length"]) * int(r["d_model"]) < size:
            smaller.setdefault(int(r["length"]) * int(r["d_model"]), []).append(r)
    mine = [s for s, rows in smaller.items() if any(r["impl"] == cell.impl for r in rows)]
    if not mine:
        return None
    rows = smaller[max(mine)]
    t = min(float(r["median_s"]) for r in rows if r["impl"] == cell.impl)
    best = min(float(r["median_s"]) for r in rows)
    if not t > FAR_SMALLER * best:
        return None
    shape = next(f"{r['length']}x{r['d_model']}" for r in rows if r["impl"] == cell.impl)
    return (f"far behind: {t / best:.3g}x the fastest at {shape} ({t * 1e3:.3g} ms against "
            f"{best * 1e3:.3g} ms), over {FAR_SMALLER:g}x, so not timed at this larger size "
            "(--full times it)")


def _same_but_size(r: Row, cell: Cell) -> bool:
    """An unflagged ok row of an implementation (not a roof) timed on the same cell at any size."""
    return (r.get("status") == "ok" and not _truthy(r.get("is_roof")) and not load_flag(r)
            and int(r.get("threads", 0)) == cell.threads
            and all(str(r.get(k)) == str(getattr(cell, k))
                    for k in ("workload", "device", "dtype", "heads", "convention"))
            and not math.isnan(float(r.get("median_s", math.nan))))


def _one_thread_sibling(r: Row, cell: Cell) -> bool:
    """An unflagged ok 1-thread row of the same cell (any implementation)."""
    return (r.get("status") == "ok" and int(r.get("threads", 0)) == 1 and not load_flag(r)
            and all(str(r.get(k)) == str(getattr(cell, k)) for k in _SAME)
            and not math.isnan(float(r.get("median_s", math.nan))))


def _usual(cell: Cell) -> tuple[str, ...]:
    return kinds.named(cell.kind).workload(cell.workload).usual_on(cell.device)


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")
