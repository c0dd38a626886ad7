"""The pytest plugin of a worker process (`-p harness.bench.worker`): one test per cell.

At `pytest_configure`, before any test module or implementation is imported,
it reads the config file named by $PE_HARNESS_BENCH_CONFIG and pins the
threads of its backend. It parametrizes `suite.test_cell` with the config's
cells and gives each test a `bench_worker` that announces the cell in the
heartbeat file (so the parent can kill it past its timeout), applies the
budget, measures, and appends the row to the journal.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

import pytest

from harness import implementations
from harness.bench import budget, modes, prune, threads
from harness.bench.cells import Cell, Outcome, row
from harness.bench.measure import error_reason, measure
from harness.bench.roofs import ROOF_REGISTRY
from harness.bench.settings import Limits, Timing, WorkerConfig
from harness.core.registry import REGISTRY, Implementation
from harness.runs import journal
from harness.util import io

CONFIG_ENV = "PE_HARNESS_BENCH_CONFIG"
WORKER = pytest.StashKey["Worker"]()


def why_skip(cell: Cell, history: Sequence[dict[str, Any]], timing: Timing,
             limits: Limits) -> Optional[str]:
    """Why `cell` is not timed, from the rows measured before it (harness.bench.prune: far
    behind; harness.bench.budget: over a budget), or None."""
    return ((limits.prune and prune.left_out(cell, history))
            or budget.skip_reason(cell, history, timing.of(cell), limits))


class Worker:
    """This process's group: its config, the pinned threads and the rows so far (for budgets)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.thread_settings = threads.pin(config.backend, config.threads)
        self.pinned = config.threads          # what the backend's pools hold now
        implementations(config.plugins)       # built-ins and plugins into the registry
        self.journal = Path(config.run_dir) / journal.FILENAME
        self.history = journal.read_all(self.journal)
        #: (implementation, dtype) called in this process so far: their next first call is warm
        self.called: set[tuple[str, str]] = set()
        self.cell_started = time.time()
        self.beats = 0                        # heartbeats written: each names one

    def run(self, cell: Cell, benchmark: Any) -> None:
        """Announce, maybe skip, measure and record one cell."""
        self._beat(cell)
        if cell.threads != self.pinned:       # a worker serving several thread counts
            self.thread_settings = threads.pin(self.config.backend, cell.threads, again=True)
            self.pinned = cell.threads
        reason = why_skip(cell, self.history, self.config.timing, self.config.limits)
        if reason:
            self._record(cell, Outcome("skip", reason, thread_settings=self.thread_settings))
            pytest.skip(reason)
        try:
            impl = self._implementation(cell)
        except KeyError as exc:
            outcome = Outcome("error", error_reason("lookup", exc),
                              thread_settings=self.thread_settings)
        else:
            outcome = self._measure(impl, cell, benchmark)
        self._record(cell, outcome)
        if outcome.status in ("error", "invalid"):
            pytest.fail(f"{outcome.status}: {outcome.reason}", pytrace=False)

    def _measure(self, impl: Implementation, cell: Cell, benchmark: Any) -> Outcome:
        """Measure, and say whether the first call found this implementation's caches cold:
        `warm` after its own earlier call here, `shared` when other implementations of a JIT
        backend ran here first (their compiled code may be its own), else `cold`."""
        label = "cold"
        if (cell.impl, cell.dtype) in self.called:
            label = "warm"
        elif self.config.shared_jit and self.called:
            label = "shared"
        outcome = measure(impl, cell, benchmark, self.thread_settings, self.config.timing.of(cell),
                          on_timing=lambda phase: self._beat(cell, phase))
        if not math.isnan(outcome.build_s):        # built: its first call ran, or tried to
            self.called.add((cell.impl, cell.dtype))
        if math.isnan(outcome.first_call_s):
            return outcome
        return replace(outcome, first_call=label)

    def _beat(self, cell: Cell, phase: str = "") -> None:
        """The heartbeat: the cell now running, since when, and (`timing`) that its timed
        rounds start now."""
        if not phase:
            self.cell_started = time.time()
        self.beats += 1
        io.write_text(Path(self.config.heartbeat),
                      json.dumps({"key": cell.key, "time": self.cell_started, "pid": os.getpid(),
                                  "phase": phase, "beat": self.beats}), durable=False)

    @staticmethod
    def _implementation(cell: Cell) -> Implementation:
        return (ROOF_REGISTRY if cell.is_roof else REGISTRY).get(cell.impl)

    def _record(self, cell: Cell, outcome: Outcome) -> None:
        line = {**row(cell, outcome), "beat": self.beats}    # the heartbeat it answers
        journal.append(self.journal, line)
        self.history.append(line)


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(CONFIG_ENV)
    if path:
        config.stash[WORKER] = Worker(WorkerConfig.load(Path(path)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cell" in metafunc.fixturenames and WORKER in metafunc.config.stash:
        config = metafunc.config.stash[WORKER].config
        cells = config.cells
        # a device cell's timer syncs the device at every reading (harness.bench.modes); a
        # roof's rounds fill a shorter time (harness.bench.settings.Timing.of)
        params = [pytest.param(c, marks=pytest.mark.benchmark(
                      timer=modes.clock(c.device), max_time=config.timing.of(c).max_time))
                  for c in cells]
        metafunc.parametrize("cell", params, ids=[c.key for c in cells])


@pytest.fixture
def bench_worker(request: pytest.FixtureRequest) -> Worker:
    return request.config.stash[WORKER]


@pytest.hookimpl(tryfirst=True)
def pytest_benchmark_generate_machine_info() -> dict[str, Any]:
    """pytest-benchmark's own probe starts a second Python for cpuinfo, then lscpu, dmesg and
    file, seconds of CPU in every worker; bench describes the machine once per run, in env.json
    (harness.bench.env), so the raw JSON names the platform and points there."""
    return {"node": platform.node(), "machine": platform.machine(), "system": platform.system(),
            "release": platform.release(), "python_version": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "cpu": {"described_in": "env.json"}}


@pytest.hookimpl(tryfirst=True)
def pytest_benchmark_generate_commit_info(config: pytest.Config) -> dict[str, Any]:
    """The commit is in env.json too (and a worker's git calls are not worth their time)."""
    return {"described_in": "env.json"}


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict) -> None:
    """Keep pytest-benchmark's statistics, not every round's sample: a default sweep times
    millions of rounds (60 MB of JSON); `pytest-benchmark compare` needs only the stats."""
    for bench in output_json.get("benchmarks", []):
        bench.get("stats", {}).pop("data", None)
