"""Leave out a cell that an earlier measurement of the same run shows cannot compete.

Three rules, each from unflagged rows measured earlier in this run (the usual choice is always
timed, and the roofs wherever they can bind: the answer's speed-ups and roof ratios are
measured against them):

- **At more threads** (`far_behind`), for a cell at fewer threads than the sweep's most, below.
- **Contenders only** (`not_contender`), for a cell at fewer threads too: what the report reads
  at one thread is the scaling of the implementations that compete (its "x roof, 1 thread" is
  the best one's), so only the CONTENDERS fastest at the most threads are timed there, and of
  the roofs only those that can still bind (within the thread gain of the fastest roof of the
  same bound: the slower ones cannot become the fastest, so the roof's time is unchanged).
  An implementation already left out at the most threads as far behind is not timed at fewer.
- **At a smaller size** (`behind_at_smaller`): an implementation over FAR_SMALLER times the
  fastest at the next smaller landmark of the same cell is not timed at the larger one. A gap
  can narrow with size (the fastest becomes memory-bound while a slow one stays compute-bound),
  but in a quiet default run no implementation 2x or more behind at a size was the fastest at
  the next (at 2x two were); 4x left out 53 more cells than 8x (about 100 s) and lost none. Cells of a worker run smallest size first, every
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
from typing import Any, Iterable, Optional, Sequence

from harness.bench.cells import Cell
from harness.core import kinds
from harness.runs.flags import load_flag
from harness.runs.results import roof_bound

#: How far behind (at least) an all-core cell must be proven to be before it is left out.
FAR = 4.0
#: How far behind at the next smaller size before a larger one is left out (no implementation
#: 2x behind at a size was the fastest at the next in the quiet default runs; 3x, not 4x, to
#: bring the default bench under 10 minutes, 347ef73's at 10.8).
FAR_SMALLER = 3.0
#: At fewer threads than the sweep's most, this many of the fastest implementations at the most
#: threads are timed (and the usual choice): the report's one-thread figures are the pick's, and
#: in the quiet default run of 2026-11-27 every pick was the fastest at all cores (a third costs
#: about 35 s of the sweep, replayed on that run, and answered nothing).
CONTENDERS = 2

Row = dict[str, Any]
_SAME = ("workload", "device", "dtype", "length", "d_model", "batch", "heads", "convention")


def left_out(cell: Cell, history: Sequence[Row]) -> Optional[str]:
    """Why the default sweep need not time `cell` (the first rule that proves it), or None."""
    return (far_behind(cell, history) or not_contender(cell, history)
            or behind_at_smaller(cell, history))


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


def not_contender(cell: Cell, history: Sequence[Row]) -> Optional[str]:
    """Why `cell`, at fewer threads than measured for it already, need not be timed: left out
    as far behind there, not among the CONTENDERS fastest there, or a roof that cannot bind."""
    if cell.impl in _usual(cell):
        return None
    newest = {r.get("key"): r for r in history}.values()   # a judged row replaces a timing
    more = [r for r in newest if _same_cell(r, cell) and int(r.get("threads", 0)) > cell.threads]
    if not more:
        return None
    most = max(int(r["threads"]) for r in more)
    at_most = [r for r in more if int(r["threads"]) == most]
    mine = [r for r in at_most if r["impl"] == cell.impl]
    if not cell.is_roof and any(_left_out(r) for r in mine):
        return (f"far behind: left out at {most} threads as far behind, and fewer threads never "
                "make an implementation faster (--full times it)")
    times: dict[str, float] = {}
    for r in (r for r in at_most if _rival(r, cell)):
        times[r["impl"]] = min(times.get(r["impl"], math.inf), float(r["median_s"]))
    if cell.impl not in times:
        return None             # flagged or failed there: no proof
    t, best, gain = times[cell.impl], min(times.values()), most / cell.threads
    if cell.is_roof:
        if not t > gain * best:
            return None
        return (f"cannot bind: {t * 1e3:.3g} ms at {most} threads is {t / best:.3g}x the fastest "
                f"{roof_bound(cell.impl)} roof, over the {gain:g}x fewer threads can slow it "
                "(--full times it)")
    rank = sum(1 for v in times.values() if v < t)
    if rank < CONTENDERS:
        return None
    return (f"not a contender: number {rank + 1} at {most} threads ({t * 1e3:.3g} ms against "
            f"{best * 1e3:.3g} ms); fewer threads are timed for the {CONTENDERS} fastest "
            "(--full times it)")


def close_to_fastest(cell: Cell, median_s: float, rows: Iterable[Row], within: float) -> bool:
    """Whether `cell`'s time `median_s` is within `within` times the fastest unflagged time of
    the same cell (same threads and mode; a roof: of the roofs of its bound) in `rows`, so that
    its noise could change an answer. The usual choice's always could: its speed-ups are one."""
    if cell.impl in _usual(cell):
        return True
    times = [float(r["median_s"]) for r in rows
             if _same_cell(r, cell) and int(r.get("threads", 0)) == cell.threads
             and str(r.get("mode") or "") == cell.mode and _rival(r, cell)]
    return not times or median_s <= within * min(times)


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


def _same_cell(r: Row, cell: Cell) -> bool:
    """A row (any status, any implementation) of the same cell at any thread count."""
    return all(str(r.get(k)) == str(getattr(cell, k)) for k in _SAME)


def _clean(r: Row) -> bool:
    """An unflagged ok row with a median (its clock and inputs not caught either)."""
    return (r.get("status") == "ok" and not load_flag(r) and not r.get("clock")
            and not r.get("inputs")
            and not math.isnan(float(r.get("median_s", math.nan))))


def _rival(r: Row, cell: Cell) -> bool:
    """A clean row that competes with `cell`: an implementation's with an implementation, a
    roof's with a roof of the same bound (the roof of an output is the fastest of its bound)."""
    return (_clean(r) and _truthy(r.get("is_roof")) == cell.is_roof
            and (not cell.is_roof or roof_bound(r["impl"]) == roof_bound(cell.impl)))


def _left_out(r: Row) -> bool:
    """A row of a cell left out as far behind (this module's skips)."""
    return r.get("status") == "skip" and str(r.get("reason", "")).startswith("far behind")


def _sibling_at_more_threads(r: Row, cell: Cell) -> bool:
    """An unflagged ok row of the same cell (any implementation) at more threads."""
    return (r.get("status") == "ok" and int(r.get("threads", 0)) > cell.threads
            and not load_flag(r) and all(str(r.get(k)) == str(getattr(cell, k)) for k in _SAME)
            and not math.isnan(float(r.get("median_s", math.nan))))


def _usual(cell: Cell) -> tuple[str, ...]:
    return kinds.named(cell.kind).workload(cell.workload).usual_on(cell.device)


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")
