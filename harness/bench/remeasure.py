"""A flagged cell is not a lost cell: measure it again later in the run, within a bound.

On a shared machine load comes in bursts; one burst should not decide a cell.
pyperf spreads a benchmark over several processes and asv interleaves its
repeats with other benchmarks for the same reason. Here a cell whose timing
was flagged (harness.runs.flags: other processes on the cores it needed, or
far slower at more threads than at one) or noisy (IQR over NOISY_IQR of the
median) joins a queue; the sweep measures the queue again in a fresh worker
once at least one other group has run since (so the retry is interleaved
with other work, seconds or minutes later, not back to back) and MIN_BATCH
cells wait (each batch starts its workers afresh), and drains what is left
at the end. The newest row of a cell is the one reported
(harness.runs.results.tidy), so a clean retry replaces a flagged first try.

The bound: at most MAX_ATTEMPTS measurements of one cell, at most
MAX_SHARE of the cells measured again, and retries stop once they have used
SHARE_OF_TIME of the time the sweep took so far (but are always allowed
MIN_SECONDS): a run under steady heavy load ends, saying what stayed flagged.
The time bound holds for a batch too: a batch takes only as many cells as fit the
time left at the seconds per cell of the sweep so far, or of the retries so far where
those were slower (a batch starts its workers afresh: a quiet run's first batch took
1 s a cell against the sweep's 0.55), so that a batch cannot overshoot it (one of 144
cells took 225 s, four minutes into a 14-minute sweep).
Cells flagged for load or threads go before cells that are only noisy: a flag
keeps a cell out of the answers, noise only widens its interval. So in the default
sweep (`contenders_only`) a cell only noisy is measured again only where an answer
could move: within CLOSE times the fastest of its cell measured so far, or the usual
choice (harness.bench.prune.close_to_fastest); a quiet run measured a quarter of its
cells again for noise, half of them far behind.

A cell flagged for load at several threads also gets a *fallback*: the same cell at
as many threads as the load left free (`fewer_threads`), queued with the retries but
outside their bounds (at most one per planned cell, so a run under steady load takes
at most twice its cells). Under one busy core of two every 2-thread cell is flagged,
and a run that times only 2 threads (`--quick`) answered one workload of six; with
the fallback it answers each at 1 thread, and says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

from harness.bench.cells import Cell
from harness.bench.prune import close_to_fastest
from harness.runs.flags import LOAD_MARGIN, Running
from harness.util.units import NOISY_IQR

#: Measurements of one cell at most (the first one included).
MAX_ATTEMPTS = 3
#: Of the sweep's cells, the share that may be measured again.
MAX_SHARE = 0.25
#: Retries may add this share of the sweep's time so far, and always MIN_SECONDS: a quiet
#: default run measured half its cells again when retries could take as long as half the sweep,
#: and at a fifth (with batches sized by the sweep's seconds per cell) 140 cells in 168 s of
#: its 665 (7ef9cf7): 22 of them flagged for load, the rest only noisy, of which a third came
#: back under NOISY_IQR and half came back noisier: noise only widens a cell's interval.
#: 0.05, not 0.1, since 347ef73's quiet default bench took 10.8 minutes (fallbacks for load are
#: outside this bound, and flagged cells go before noisy ones).
SHARE_OF_TIME, MIN_SECONDS = 0.05, 20.0
#: A cell only noisy is measured again (contenders_only) within this many times the fastest.
CLOSE = 1.5
#: The sweep measures queued cells again once this many wait (or at its end): each batch starts
#: a worker per backend, 3-25 s of imports and kernel loads before its first cell, and a quiet
#: default run's 147 retries in batches after each of its groups spent 60 of their 149 s there.
MIN_BATCH = 12


def why_again(row: Mapping[str, Any], running: Running) -> str:
    """Why a finished row should be measured again ('' when it should not): its flags, or noise."""
    if row.get("status") != "ok" or row.get("clock") or row.get("inputs"):
        return ""   # a verdict on the implementation, not the machine: a retry could only lose it
    flag = running.flag(row)
    if flag:
        return flag
    median, iqr = _number(row.get("median_s")), _number(row.get("iqr_s"))
    if median and iqr is not None and iqr / median > NOISY_IQR:
        return f"noisy: IQR {iqr / median:.0%} of the median (> {NOISY_IQR:.0%})"
    return ""


@dataclass
class Retries:
    """Which flagged cells to measure again, and when; counts attempts and time spent."""

    total_cells: int
    max_attempts: int = MAX_ATTEMPTS
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)
    spent_s: float = 0.0
    spent_cells: int = 0    # cells the batches of retries (and fallbacks) measured in spent_s
    attempts: dict[str, int] = field(default_factory=dict)
    waiting: dict[str, tuple[Cell, int]] = field(default_factory=dict)   # key -> (cell, group no.)
    why: dict[str, str] = field(default_factory=dict)
    running: Running = field(default_factory=Running)
    retried: set[str] = field(default_factory=set)
    #: measure a cell only noisy again only where its noise could move an answer
    contenders_only: bool = False
    rows: dict[str, Mapping[str, Any]] = field(default_factory=dict)   # key -> newest row
    measured: int = 0       # rows seen that measured something (not a skip): the time per cell
    #: the keys of the planned cells: a fallback is queued only where none is planned
    planned: frozenset[str] = frozenset()
    fallbacks: dict[str, tuple[Cell, int]] = field(default_factory=dict)  # key -> (cell, group)
    #: a batch before the end waits for this many queued cells (the sweep passes MIN_BATCH)
    min_batch: int = 1
    extra: dict[str, Cell] = field(default_factory=dict)   # key -> fallback cell (queued or run)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()

    def seen(self, row: Mapping[str, Any], cell: Cell | None, group: int) -> None:
        """Count a finished row (measured in group number `group`); queue its cell when flagged."""
        key = str(row["key"])
        self.rows[key] = row
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.measured += row.get("status") != "skip"
        reason = why_again(row, self.running)
        self.waiting.pop(key, None)
        if reason:
            self.why[key] = reason
        else:
            self.why.pop(key, None)
        if reason and cell is not None and self.attempts[key] < self.max_attempts:
            self.waiting[key] = (cell, group)
        if reason.startswith("load") and cell is not None:
            self._fall_back(row, cell, group)

    def _fall_back(self, row: Mapping[str, Any], cell: Cell, group: int) -> None:
        """Queue `cell` at the threads the load left free, unless planned or queued already."""
        threads = fewer_threads(row, cell.threads)
        if threads >= cell.threads:
            return
        fallback = replace(cell, threads=threads)
        if fallback.key in self.planned or fallback.key in self.extra:
            return
        self.extra[fallback.key] = fallback
        self.fallbacks[fallback.key] = (fallback, group)

    def cell(self, key: str) -> Cell | None:
        """The fallback cell of `key`, if this object queued one."""
        return self.extra.get(key)

    @property
    def pending(self) -> bool:
        """Whether cells are queued: retries or fallbacks."""
        return bool(self.waiting or self.fallbacks)

    def due(self, group: int, final: bool = False) -> list[Cell]:
        """The queued cells to measure now, after group number `group` ended: the fallbacks
        queued before it (or all, at the end), then the retries, within their bound; before
        the end, nothing until at least `min_batch` cells are queued."""
        queued = [q for _, q in self.fallbacks.values()] + [q for _, q in self.waiting.values()]
        if not final and sum(q < group for q in queued) < self.min_batch:
            return []
        ready = [c for key, (c, queued) in self.fallbacks.items() if final or queued < group]
        for cell in ready:
            self.fallbacks.pop(cell.key)
        return ready + self._retries(group, final)

    def _retries(self, group: int, final: bool) -> list[Cell]:
        """The retries due now (see `due`); the rest wait or are dropped."""
        if not self.allowed():
            self.waiting.clear()
            return []
        room = max(int(MAX_SHARE * self.total_cells) - len(self.retried), 0)
        ready = [cell for key, (cell, queued) in self.waiting.items() if final or queued < group]
        for cell in [c for c in ready if not self._could_move(c)]:
            self.waiting.pop(cell.key)            # noise far behind: stays noisy, said so
            ready.remove(cell)
        ready.sort(key=lambda cell: self.why.get(cell.key, "").startswith("noisy"))  # flags first
        chosen = ready[:min(room, self._fit())]   # the rest wait for a later batch's time
        for cell in chosen:
            self.waiting.pop(cell.key)
            self.retried.add(cell.key)
        if room <= len(ready):
            self.waiting.clear()          # the count bound is reached: nothing more will run
        return chosen

    def _fit(self) -> int:
        """How many cells fit the time retries have left, at the sweep's mean seconds per
        measured cell so far, or the retries' own where slower (at least one: `allowed` said
        there is time)."""
        elapsed = self.clock() - self.started
        if elapsed <= 0 or not self.measured:
            return self.total_cells
        left = max(MIN_SECONDS, SHARE_OF_TIME * (elapsed - self.spent_s)) - self.spent_s
        per_cell = elapsed / self.measured
        if self.spent_cells:
            per_cell = max(per_cell, self.spent_s / self.spent_cells)
        return max(1, int(left / per_cell))

    def _could_move(self, cell: Cell) -> bool:
        """Whether measuring `cell` again could move an answer: always for a flag; for noise
        only, unless contenders_only, where it is close to the fastest of its cell."""
        if not self.contenders_only or not self.why.get(cell.key, "").startswith("noisy"):
            return True
        median = _number(self.rows[cell.key].get("median_s"))
        return median is None or close_to_fastest(cell, median, self.rows.values(), CLOSE)

    def timed(self, seconds: float, cells: int = 0) -> None:
        """Add the wall time a batch of retries took, and how many cells it measured."""
        self.spent_s += seconds
        self.spent_cells += cells

    def allowed(self) -> bool:
        """Whether retries still fit their time bound."""
        elapsed = self.clock() - self.started - self.spent_s
        return self.spent_s < max(MIN_SECONDS, SHARE_OF_TIME * elapsed)

    def still_flagged(self) -> dict[str, str]:
        """key -> why, for the cells whose newest row is still flagged or noisy."""
        return dict(self.why)


def fewer_threads(row: Mapping[str, Any], threads: int) -> int:
    """The threads a cell flagged for load at `threads` could have had to itself: the cores
    the other processes left free (harness.runs.flags.load_flag's rule), at least one."""
    cores, others = _number(row.get("cores")), _number(row.get("others_busy"))
    if not cores or others is None:
        return max(1, threads // 2)       # load average only: halve
    return max(1, min(threads, math.floor(cores - others + LOAD_MARGIN)))


def interleave(cells: Iterable[Cell]) -> list[Cell]:
    """Cells ordered round-robin over implementations, so a burst of load meets several."""
    by_impl: dict[str, list[Cell]] = {}
    for cell in cells:
        by_impl.setdefault(cell.impl, []).append(cell)
    queues = list(by_impl.values())
    out: list[Cell] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
