"""The unit of a sweep: a `Cell` (what to time) and its `Outcome` (what came of it).

A cell is one implementation at one size, dtype, thread count and device.
Both are frozen and JSON-friendly: the parent writes cells to a worker's
config file and the worker writes `row(cell, outcome)` to the journal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Optional

from harness.core import kinds
from harness.core.record import ITEMSIZE
from harness.core.registry import Implementation
from harness.runs.identity import FIELDS, CellKey

#: ok: timed; invalid: ran, but its result is not a valid table or its callable is a lookup
#: (harness.bench.validity), so it was not timed; error, timeout: it failed or hung; skip: not run.
STATUSES = ("ok", "invalid", "error", "timeout", "skip")
#: Raw rounds kept per cell: enough for a rank test, a few kB of journal per cell at most.
MAX_SAMPLES = 64


def thin(values: Any, most: int = MAX_SAMPLES) -> tuple[float, ...]:
    """At most `most` of `values`, evenly spaced in the order they ran (drift stays visible)."""
    values = list(values)
    if len(values) <= most:
        return tuple(float(v) for v in values)
    step = len(values) / most
    return tuple(float(values[int(i * step)]) for i in range(most))


@dataclass(frozen=True)
class Cell:
    """One timing: which implementation, on which table, with how many threads where."""

    impl: str
    backend: str
    device: str
    workload: str
    convention: str
    length: int
    d_model: int
    dtype: str
    threads: int
    batch: int = 1
    is_roof: bool = False
    mode: str = ""          # how a device cell is timed (harness.bench.modes); "" on the CPU
    heads: int = 1          # attention heads of a rotary apply's q and k
    kind: str = "table"     # the kind of table (harness.core.kinds); its workload says which

    @property
    def identity(self) -> CellKey:
        """What makes this cell the same in the journal, the flags, the roofs and the report."""
        return CellKey(**{name: getattr(self, name) for name in FIELDS})

    @property
    def key(self) -> str:
        """Stable identity in the journal and for --resume. An implementation's convention
        follows from its name; a roof's does not: it stands beside every output shape of the
        cell (a grid with a cls row, a 3-D grid's), one cell per convention, which the key
        names - else the journal kept one of them and the other's cells had no roof."""
        text = self.identity.text(self.work.batched)
        return f"{text}:{self.convention}" if self.is_roof else text

    @property
    def work(self) -> kinds.Workload:
        return kinds.named(self.kind).workload(self.workload)

    @property
    def shape(self) -> tuple[int, ...]:
        """What one call returns (a tuple result's parts stacked first)."""
        return self.work.shape(self.spec(), self.batch, self.heads)

    @property
    def elements(self) -> int:
        """Elements written per call: the table, x + PE for every batch row, a cos/sin pair,
        q and k (each with its own heads)..."""
        return self.work.elements(self.spec(), self.batch, self.heads)

    @property
    def arrangement(self) -> kinds.Arrangement:
        """How a tuple result's parts come back (their shapes) and are joined."""
        return self.work.arrangement(self.spec(), self.batch, self.heads)

    @property
    def bytes_out(self) -> int:
        return self.elements * ITEMSIZE[self.dtype]

    def spec(self) -> Any:
        return kinds.named(self.kind).bench_spec(self.length, self.d_model, self.dtype,
                                                 self.convention)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Cell":
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def choose_convention(impl: Implementation, length: int, d_model: int, dtype: str,
                      only: str = "") -> tuple[Optional[str], str]:
    """(first of its kind's conventions it supports, "") or (None, why the first is not
    supported); with `only`, that convention or none (a kind without it: none)."""
    kind = kinds.named(impl.kind)
    if only and only not in kind.conventions:
        return None, f"kind {kind.name!r} has no convention {only!r}"
    first = None
    for name in (only,) if only else kind.conventions:
        try:
            spec = kind.bench_spec(length, d_model, dtype, name)
        except ValueError as exc:        # these axes make no spec of this convention
            reason = str(exc)
        else:
            reason = impl.supports(spec)
            if reason is None:
                return name, ""
        first = first or reason
    return None, first or "no convention supported"


@dataclass(frozen=True)
class Outcome:
    """What became of a cell: statistics from pytest-benchmark, or why there are none, and what
    the cell's callable kept and the machine did meanwhile."""

    status: str
    reason: str = ""
    median_s: float = math.nan
    iqr_s: float = math.nan
    min_s: float = math.nan
    mean_s: float = math.nan
    stddev_s: float = math.nan
    rounds: int = 0
    build_s: float = math.nan
    first_call_s: float = math.nan
    #: "cold": the first call of this implementation and dtype in its worker process (for a
    #: backend that compiles, `Backend.jit`, the process ran nothing before it); "warm": an
    #: earlier cell of the process called it already; "" when there was no first call
    first_call: str = ""
    peak_bytes: float = math.nan
    peak_method: str = ""
    thread_settings: str = ""
    #: bytes of arrays reachable from the callable after setup (harness.bench.validity)
    retains_bytes: float = math.nan
    #: the machine's load around the cell (harness.bench.contention)
    load_before: float = math.nan
    load_after: float = math.nan
    others_busy: float = math.nan
    cores: int = 0
    #: the worker's threads that ran a tenth of the cell's window or more (harness.bench.contention)
    threads_ran: float = math.nan
    #: cores' worth of its threads waiting, ready, for a CPU over that window
    waited: float = math.nan
    #: per-call seconds of up to MAX_SAMPLES of the timed rounds, in the order they ran
    #: (the compare gate's statistical test reads them: harness.report.gate)
    samples_s: tuple[float, ...] = ()
    #: seconds the cell's own timer counted over calibration and the timed rounds; the
    #: supervisor holds them against its own clock (harness.bench.supervisor)
    timer_s: float = math.nan
    #: the first call's and a timed call's values at the run's sampled places, judged against
    #: the reference by the supervisor (harness.bench.fingerprint)
    sampled: tuple[tuple[float, ...], ...] = ()
    #: for a workload with inputs: a call's values at those places after the inputs its factory
    #: was given were negated in place, after the timed rounds (harness.bench.fingerprint)
    moved: tuple[float, ...] = ()
    #: for a workload with inputs: "call" when its callable took them at every call (converted
    #: by the harness, harness.core.handover), "build" when its factory took them (deprecated)
    inputs_at: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


def row(cell: Cell, outcome: Outcome) -> dict[str, Any]:
    """One journal line / CSV row: the cell's identity, then its outcome."""
    return {"key": cell.key, **cell.as_dict(), "bytes_out": cell.bytes_out, **asdict(outcome)}
