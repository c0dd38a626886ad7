"""One line per finished cell, with elapsed time and an ETA for the rest of the sweep.

The ETA is the median wall time between the last cells finished, per unit of
`weight`, times the weight of the cells left: a median, because the first cells
of a sweep also pay for worker start-up and JIT compilation (the mean of the
first cell alone once promised 47 minutes for a 3-minute sweep), and no ETA at
all until a few cells have finished. A cell's weight grows with the bytes it
writes per thread (`weight`): a sweep's small cells come first in every worker
and its largest take several times as long, so a plain count of the cells left
read "55s" with half the sweep's time still to come. Cells whose weight is not
known (not announced with `expect`) weigh 1. Skipped cells (far behind at a smaller size, over
a budget) are written in bursts without running: their zero gaps had the ETA read 1m27s with
5.5 minutes of the default sweep to come, so only cells that ran give gaps. A timing the machine's load
may have distorted is marked `FLAGGED (why)` (harness.bench.contention).
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from typing import Any, Callable, Iterable, Optional

from harness.runs.flags import Running
from harness.util.units import NOISY_IQR, seconds


def duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


#: Cells to finish before an ETA is shown, and how many recent gaps its median uses
ETA_AFTER, ETA_WINDOW = 3, 25
#: Bytes written per thread that cost a cell as much again as a small cell's fixed part
#: (rounds for max_time, the checks): a 64 MiB table at one thread weighs 9, a small one 1.
WEIGHT_BYTES = 8 << 20


def weight(cell: Any) -> float:
    """How long a cell (a Cell or its row) is expected to take, relative to a small one."""
    get = cell.get if isinstance(cell, dict) else lambda name: getattr(cell, name, None)
    try:
        return 1.0 + float(get("bytes_out")) / max(1, int(get("threads"))) / WEIGHT_BYTES
    except (TypeError, ValueError):
        return 1.0


class Progress:
    """Counts finished cells against the total and formats their lines."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.done = 0
        self.clock = clock
        self.started = self.last = clock()
        self.gaps: deque[float] = deque(maxlen=ETA_WINDOW)      # seconds per unit of weight
        self.flags = Running()
        self.pending: dict[str, list[float]] = {}                # key -> weights of cells to come

    def expect(self, cells: Iterable[Any]) -> None:
        """Cells to come (counted in `total` already): their weights for the ETA."""
        for cell in cells:
            self.pending.setdefault(cell.key, []).append(weight(cell))

    def left_s(self) -> Optional[float]:
        """Seconds until the last cell (None until ETA_AFTER cells have finished)."""
        if self.done >= self.total:
            return 0.0
        if self.done < ETA_AFTER or not self.gaps:
            return None
        known = [w for ws in self.pending.values() for w in ws]
        unknown = max(0, self.total - self.done - len(known))
        return statistics.median(self.gaps) * (sum(known) + unknown)

    def eta(self) -> str:
        left = self.left_s()
        return "ETA ..." if left is None else f"ETA {duration(left)}"

    def line(self, row: dict[str, Any]) -> str:
        """Count `row` as finished and describe it."""
        self.done += 1
        now = self.clock()
        elapsed = now - self.started
        waiting = self.pending.get(str(row.get("key")))
        unit = waiting.pop() if waiting else weight(row)
        if waiting == []:
            del self.pending[str(row.get("key"))]
        if row.get("status") != "skip":   # a skip is written at once, untimed: no gap of its own
            self.gaps.append((now - self.last) / unit)
            self.last = now
        width = len(str(self.total))
        what = (f"[{self.done:>{width}}/{self.total}] {row['impl']:<24} {row['workload']:<7} "
                f"{row['length']:>6}x{row['d_model']:<5} {row['dtype']:<8} {row['threads']}t")
        flag = self.flags.flag(row)
        line = f"{what}  {_result(row):<34} {duration(elapsed)} elapsed, {self.eta()}"
        return line + (f"  FLAGGED ({flag})" if flag else "")


def _result(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        reason = row["reason"] if len(row["reason"]) <= 60 else row["reason"][:57] + "..."
        return f"{row['status']}: {reason}"
    median, iqr = row["median_s"], row["iqr_s"]
    noisy = " noisy" if median > 0 and not math.isnan(iqr) and iqr / median > NOISY_IQR else ""
    return f"ok {seconds(median)} (IQR {iqr / median:.0%}){noisy}" if median > 0 else "ok"
