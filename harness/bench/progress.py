"""One line per finished cell, with elapsed time and an ETA for the rest of the sweep.

The ETA is the mean wall time per cell so far (worker start-ups included)
times the cells left: crude, but it never needs a prediction the cell itself
has not made yet, and it settles as the sweep goes. A timing the machine's load
may have distorted is marked `FLAGGED (why)` (harness.bench.contention).
"""

from __future__ import annotations

import math
import time
from typing import Any

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


class Progress:
    """Counts finished cells against the total and formats their lines."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.flags = Running()

    def line(self, row: dict[str, Any]) -> str:
        """Count `row` as finished and describe it."""
        self.done += 1
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * max(self.total - self.done, 0)
        width = len(str(self.total))
        what = (f"[{self.done:>{width}}/{self.total}] {row['impl']:<24} {row['workload']:<7} "
                f"{row['length']:>6}x{row['d_model']:<5} {row['dtype']:<8} {row['threads']}t")
        flag = self.flags.flag(row)
        line = f"{what}  {_result(row):<34} {duration(elapsed)} elapsed, ETA {duration(eta)}"
        return line + (f"  FLAGGED ({flag})" if flag else "")


def _result(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        reason = row["reason"] if len(row["reason"]) <= 60 else row["reason"][:57] + "..."
        return f"{row['status']}: {reason}"
    median, iqr = row["median_s"], row["iqr_s"]
    noisy = " noisy" if median > 0 and not math.isnan(iqr) and iqr / median > NOISY_IQR else ""
    return f"ok {seconds(median)} (IQR {iqr / median:.0%}){noisy}" if median > 0 else "ok"
