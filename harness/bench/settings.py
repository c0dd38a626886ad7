"""Frozen settings shared by the parent and its workers, and the worker's config file.

The parent decides everything (cells, timing options, limits) and hands it to
each worker process as one JSON file; the worker never reads the command line.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

from harness.bench.cells import Cell
from harness.bench.modes import slow
from harness.util import io


@dataclass(frozen=True)
class Timing:
    """pytest-benchmark's own options for every cell (its calibration decides the rest).

    The defaults are the default sweep's; QUICK_TIMING is --quick's.
    """

    #: 0.08 s, not 0.1: the quiet default bench of 347ef73 took 10.8 minutes, its sweep 7.7 (165 s
    #: of it timed rounds); a median over 20% fewer rounds has a standard error 12% larger
    max_time: float = 0.08
    min_rounds: int = 5
    #: A roof (a bare fill or write, harness.bench.roofs) is timed for this share of max_time:
    #: the quiet default run 20261128-101932: 390 roof cells, 141 s of its 503 s sweep, 17 s of
    #: it rounds past half of max_time; a roof's median over 60 rounds (the median roof cell,
    #: IQR 10% of its median) has a standard error near 1.2%, over half as many 1.7%; a quarter
    #: of them run only min_rounds (large tables) and are unchanged.
    roof_share: float = 0.5

    def of(self, cell: Cell) -> "Timing":
        """The timing of `cell`: a roof's max_time is roof_share of the others'."""
        if not cell.is_roof or self.roof_share == 1.0:
            return self
        return replace(self, max_time=self.max_time * self.roof_share, roof_share=1.0)

    def pytest_args(self) -> list[str]:
        return ["--benchmark-max-time", repr(self.max_time),
                "--benchmark-min-rounds", str(self.min_rounds)]

    def cell_seconds(self, call_s: float) -> float:
        """Wall time of a cell whose call takes `call_s`: rounds for max_time (at least
        min_rounds), plus the untimed first, warm and peak-memory calls and, where the rounds
        are calibrated (not a slow call: harness.bench.modes.slow), pytest-benchmark's
        calibration call and its final call."""
        calibrated = 0 if slow(call_s, self.max_time, self.min_rounds) else 2
        return max(self.max_time, self.min_rounds * call_s) + (3 + calibrated) * call_s


@dataclass(frozen=True)
class Limits:
    """When to give up on a cell: predicted over budget (skip) or running too long (kill)."""

    cell_budget_s: float = 10.0
    timeout_s: float = 120.0
    budget_s: Optional[float] = None        # the whole sweep, as given on the command line
    deadline: Optional[float] = None        # time.time() when budget_s runs out
    prune: bool = True                      # leave out cells proven far behind (not --full)


#: --quick: shorter timing, and a tighter budget so slow cells are skipped sooner.
QUICK_TIMING = Timing(max_time=0.05, min_rounds=3)
QUICK_LIMITS = Limits(cell_budget_s=3.0, timeout_s=30.0)


@dataclass(frozen=True)
class WorkerConfig:
    """Everything one worker process needs: its group, its cells and where to write."""

    backend: str
    threads: int
    plugins: tuple[str, ...]
    cells: tuple[Cell, ...]
    run_dir: str
    heartbeat: str
    timing: Timing
    limits: Limits
    #: several implementations of a backend that compiles on first use share this worker
    shared_jit: bool = False

    def save(self, path: Path) -> Path:
        data = {**asdict(self), "cells": [c.as_dict() for c in self.cells]}
        return io.write_text(path, json.dumps(data, indent=1))

    @classmethod
    def load(cls, path: Path) -> "WorkerConfig":
        data = json.loads(Path(path).read_text())
        return cls(backend=data["backend"], threads=data["threads"],
                   plugins=tuple(data["plugins"]),
                   cells=tuple(Cell.from_dict(c) for c in data["cells"]),
                   run_dir=data["run_dir"], heartbeat=data["heartbeat"],
                   timing=Timing(**data["timing"]), limits=Limits(**data["limits"]),
                   shared_jit=bool(data.get("shared_jit", False)))
