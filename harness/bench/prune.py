"""Leave out a cell that an earlier measurement of the same run shows cannot compete.

Two proofs, each from unflagged rows measured earlier in this run (the usual choice and the
roofs are always timed: the answer's speed-ups and roof ratios are measured against them):

- **At more threads** (`far_behind`), for a cell at fewer threads than the sweep's most, below.
- **At a smaller size** (`behind_at_smaller`): an implementation over FAR_SMALLER times the
  fastest at the next smaller landmark of the same cell is not timed at the larger one. The
  bound is wider than FAR because a gap can narrow with size (the fastest becomes memory-bound
  while a slow one stays compute-bound). Cells of a worker run smallest size first, every
  implementation of it (harness.bench.sweep.groups), so the smaller size is there to read.

Fewer threads never make an implementation faster (when more threads slow one down,
`harness.runs.flags` flags it), and going from n threads to t speeds the fastest up at most
n / t times in reverse. So an implementation whose time at n threads is over FAR x n / t
times the fastest at n threads is at least FAR times behind the fastest at t threads too:
timing it there answers nothing the report asks. The default sweep times one thread at each
kind's largest size only, the slowest cells of the run: all-core groups run first, so these
can be left out where the all-core rows prove it (at 2 cores, over 8x behind there).
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
    """Why `cell` need not be timed at its (fewer) threads (the reason of its `skip` row), or None."""
    if cell.is_roof or cell.impl in _usual(cell):
        return None
    more = [r for r in history if _sibling_at_more_threads(r, cell)]
    if not more:
        return None
    most = max(int(r["threads"]) for r in more)
    at_most = [r for r in more if int(r["threads"]) == most]
    mine = [float(r["median_s"]) for r in at_most if r["impl"] == cell.impl]
    others = [float(r["median_s"]) for r in at_most if not _truthy(r.get("is_roof"))]
    if not mine or not others:
        return None
    t, best, gain = min(mine), min(others), most / cell.threads
    if not t > FAR * gain * best:
        return None
    return (f"far behind: {t * 1e3:.3g} ms at {most} threads is {t / best:.3g}x the fastest "
            f"({best * 1e3:.3g} ms); fewer threads speed the fastest up at most {gain:g}x "
            f"relative to it, so at {cell.threads} it stays over {FAR:g}x behind (--full times it)")


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


def _sibling_at_more_threads(r: Row, cell: Cell) -> bool:
    """An unflagged ok row of the same cell (any implementation) at more threads."""
    return (r.get("status") == "ok" and int(r.get("threads", 0)) > cell.threads
            and not load_flag(r) and all(str(r.get(k)) == str(getattr(cell, k)) for k in _SAME)
            and not math.isnan(float(r.get("median_s", math.nan))))


def _usual(cell: Cell) -> tuple[str, ...]:
    return kinds.named(cell.kind).workload(cell.workload).usual_on(cell.device)


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")
