"""Run one group of cells in a worker process and survive whatever the implementations do.

The worker is `python -m pytest suite.py -p harness.bench.worker` in a new
session (its own process group, so it can be killed whole and a Ctrl-C at the
terminal reaches only the parent), tied to the parent by harness.util.lifeline (it
dies when the parent does, even by SIGKILL) and holding the run's lock (so a
--resume cannot start beside a worker that is still measuring). The parent
polls three files: the journal (finished cells), the heartbeat (the cell now
running, since when) and the exit status. A cell past its timeout gets the
worker killed and a `timeout` row; a worker that dies mid-cell (segfault,
os._exit) leaves an `error` row. Either way a fresh worker takes the
remaining cells.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import harness
from harness.bench import fingerprint
from harness.bench.cells import Cell, Outcome, row
from harness.bench.settings import Limits, Timing, WorkerConfig
from harness.bench.threads import thread_env
from harness.bench.worker import CONFIG_ENV, why_skip
from harness.core.isolate import describe_exit, kill
from harness.runs import journal
from harness.util import heap, io, lifeline, reaper

__all__ = ["Group", "Supervisor", "describe_exit", "unique_path"]

POLL_S = 0.2
IDLE_S = 120.0          # longest a worker may run no cell: importing a backend, loading plugins
ROOT = Path(harness.__file__).resolve().parent.parent
SUITE = Path(__file__).with_name("suite.py")


@dataclass(frozen=True)
class Group:
    """The cells one worker process runs: one backend at one thread count (or at several, for
    a backend whose pools resize while it runs). `shared_jit`: the
    backend compiles on first use and several implementations share this worker, so only its
    first first-call is cold."""

    backend: str
    threads: int                 # the most its cells use: its pools are sized for it
    cells: tuple[Cell, ...]
    shared_jit: bool = False
    counts: tuple[int, ...] = ()  # its cells' thread counts, when more than `threads` alone

    @property
    def name(self) -> str:
        return f"{self.backend}-{'+'.join(map(str, self.counts or (self.threads,)))}t"


def unique_path(folder: Path, stem: str, suffix: str) -> Path:
    """folder/stem.suffix, or stem.2.suffix ... when a resumed run already has it."""
    path, n = folder / f"{stem}{suffix}", 1
    while path.exists():
        n += 1
        path = folder / f"{stem}.{n}{suffix}"
    return path


class Supervisor:
    """Runs groups in worker processes; every row (theirs and its own) goes to `on_row`."""

    def __init__(self, run_dir: Path, plugins: Sequence[str], timing: Timing, limits: Limits,
                 on_row: Callable[[dict[str, Any]], None], keep_fds: Sequence[int] = ()) -> None:
        self.run_dir = Path(run_dir)
        self.keep_fds = tuple(keep_fds)       # the run's lock: workers hold it while they live
        self.plugins = tuple(plugins)
        self.timing, self.limits, self.on_row = timing, limits, on_row
        self.hung: set[str] = set()           # implementations that timed out once
        #: (worker pid, cell key) -> when its timed rounds began and ended, by this clock
        self.timing_since: dict[tuple[int, Any], float] = {}
        self.timing_until: dict[tuple[int, Any], float] = {}
        self.worker_pid = 0
        #: the run's sampled places; rows timed ok wait here to be judged once their worker is gone
        self.judge = fingerprint.Judge(fingerprint.new_seed())
        self.unjudged: list[dict[str, Any]] = []
        self.journal = self.run_dir / journal.FILENAME
        self.reader = journal.JournalReader(self.journal)
        self.reader.poll()            # rows from before (--resume) are not news
        for folder in ("raw", "logs", "work"):
            (self.run_dir / folder).mkdir(parents=True, exist_ok=True)
        # the project's pytest settings (addopts = --benchmark-disable, ...) must not reach workers
        self.ini = io.write_text(self.run_dir / "work" / "pytest.ini", "[pytest]\n")

    def run(self, group: Group) -> None:
        """Every cell of `group` ends with a row, whatever happens to the workers."""
        if self._left_out(group):
            return
        pending = list(group.cells)
        while pending:
            hung = [c for c in pending if c.impl in self.hung]   # one timeout per implementation
            if hung:
                self.settle(hung, Outcome("timeout", "not run: an earlier cell of this "
                                                     "implementation timed out"))
                pending = [c for c in pending if c.impl not in self.hung]
                continue
            done = self._attempt(group, pending)
            self._judge_values()
            if not done:
                log = self.run_dir / "logs" / f"{group.name}.log"
                self.settle(pending, Outcome("error", f"worker process made no progress; see {log}"))
                return
            pending = [c for c in pending if c.key not in done]

    def _left_out(self, group: Group) -> bool:
        """Whether the group's worker would skip every cell (`why_skip` on the journal as it
        stands, each skip row added as the worker adds its own): then their rows are written
        here and no worker starts. TensorFlow's 27 one-thread cells of the quiet default
        sweep of 20261128-101932 were all left out, after 7 s of its imports."""
        history = journal.read_all(self.journal)
        skipped = []
        for cell in group.cells:
            reason = why_skip(cell, history, self.timing, self.limits)
            if not reason:
                return False
            skipped.append((cell, reason))
            history.append(row(cell, Outcome("skip", reason)))
        for cell, reason in skipped:
            self.record(cell, Outcome("skip", reason))
        self._drain(set())
        return True

    def close(self) -> None:
        """Remove the workers' config and heartbeat files once every group has finished."""
        shutil.rmtree(self.run_dir / "work", ignore_errors=True)

    def settle(self, cells: Sequence[Cell], outcome: Outcome) -> None:
        """Give `cells` the same outcome without running them (a budget used up, a dead worker)."""
        for cell in cells:
            self.record(cell, outcome)
        self._drain(set())

    def record(self, cell: Cell, outcome: Outcome) -> None:
        """A row written by the parent (the worker is not running)."""
        journal.append(self.journal, row(cell, outcome))

    def _attempt(self, group: Group, pending: list[Cell]) -> set[str]:
        """One worker process over `pending`; returns the keys it (or its death) settled."""
        work = self.run_dir / "work"
        stem = unique_path(work, group.name, ".json").stem
        config = WorkerConfig(group.backend, group.threads, self.plugins, tuple(pending),
                              str(self.run_dir), str(work / f"{stem}.heartbeat"),
                              self.timing, self.limits, group.shared_jit)
        argv, env = self._command(group, config.save(work / f"{stem}.json"))
        tag = reaper.new_tag()
        with open(self.run_dir / "logs" / f"{group.name}.log", "a") as log, \
                lifeline.Lifeline() as line:
            log.write(f"\n$ {' '.join(argv)}\n")
            log.flush()
            try:
                proc = subprocess.Popen(argv, env={**env, **line.env, **tag}, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        pass_fds=(*line.fds, *self.keep_fds))
            finally:
                line.started()
            self.worker_pid = proc.pid
            try:
                return self._watch(proc, Path(config.heartbeat), {c.key: c for c in pending})
            finally:
                kill(proc, tag)      # and whatever its implementations started

    def _judge_values(self) -> None:
        """Hold the values the last worker's cells returned to the reference, here (which
        imports no implementation) and now (no worker times a cell): a cell whose sampled
        values miss is `invalid`, its row written again (harness.bench.fingerprint)."""
        rows, self.unjudged = self.unjudged, []
        for new in rows:
            problem = self.judge.problem(new)
            flag = "" if problem else self.judge.inputs_flag(new)
            if problem:
                journal.append(self.journal, {**new, "status": "invalid", "reason": problem,
                                              "judged": "reference"})
            elif flag:          # timed, but never recommended (harness.runs.flags)
                journal.append(self.journal, {**new, "inputs": flag, "judged": "inputs"})
        self._drain(set())

    def _command(self, group: Group, config: Path) -> tuple[list[str], dict[str, str]]:
        """pytest on the static suite with its own empty config, no conftest and only the plugins
        it needs, JSON into raw/; threads pinned through the environment."""
        argv = [sys.executable, "-m", "pytest", str(SUITE), "-q", "-c", str(self.ini),
                "--rootdir", str(ROOT), "--noconftest", "-p", "harness.bench.lifeline_plugin",
                "-p", "harness.bench.worker",
                "-p", "pytest_benchmark.plugin", "-p", "no:cacheprovider", "--benchmark-json",
                str(unique_path(self.run_dir / "raw", group.name, ".json")),
                *self.timing.pytest_args()]
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, **thread_env(group.threads), **heap.steady_env(),
               CONFIG_ENV: str(config),
               fingerprint.SEED_ENV: str(self.judge.seed),
               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": path}
        return argv, env

    def _watch(self, proc: subprocess.Popen, heartbeat: Path, cells: dict[str, Cell]) -> set[str]:
        """Follow the worker until it exits, overruns a cell, or hangs outside any cell."""
        done: set[str] = set()
        idle_since = time.time()
        while True:
            exited = proc.poll() is not None
            self._drain(done)
            beat = _read_heartbeat(heartbeat)
            key = beat["key"] if beat else None
            if beat and beat.get("phase") == "timing":    # its timed rounds began about now
                self.timing_since.setdefault((proc.pid, key), time.monotonic())
            elif beat and beat.get("phase") == "timed":   # and ended about now
                self.timing_until.setdefault((proc.pid, key), time.monotonic())
            running = key if key in cells and key not in done else None
            if exited:
                if running:
                    self.record(cells[running], Outcome(
                        "error", f"worker process died during this cell "
                                 f"({describe_exit(proc.returncode)})"))
                break
            now = time.time()
            if running is None and now - idle_since > max(IDLE_S, self.limits.timeout_s):
                kill(proc)           # stuck starting up, between cells or on its way out
                break
            if running is not None:
                idle_since = now
                if now - beat["time"] > self.limits.timeout_s:
                    kill(proc)
                    self.hung.add(cells[running].impl)
                    self.record(cells[running], Outcome(
                        "timeout", f"no result within --timeout-s {self.limits.timeout_s:g}; "
                                   "worker killed"))
                    break
            time.sleep(POLL_S)
        self._drain(done)
        return done

    def _drain(self, done: set[str]) -> None:
        news = self.reader.poll()
        while news:
            self._take(news, done)
            news = self.reader.poll()     # with any row flagged just now

    def _take(self, news: list[dict[str, Any]], done: set[str]) -> None:
        for new in news:
            done.add(new["key"])
            since = self.timing_since.get((self.worker_pid, new["key"]))
            until = self.timing_until.get((self.worker_pid, new["key"]), time.monotonic())
            disagreement = clock_disagreement(new, until - since) if since else ""
            if disagreement:       # the row again, flagged: the journal keeps the last one
                journal.append(self.journal, {**new, "clock": disagreement})
                continue           # read back (and passed on) at the next poll
            if new.get("judged"):  # the judge's own verdict on a row passed on already
                continue
            if (new.get("sampled") or new.get("moved")) and new.get("status") == "ok":
                self.unjudged.append(new)
            self.on_row(new)


#: The supervisor checks a worker's timer over timed rounds of at least CLOCK_MIN_S of its own
#: wall time; the two may differ by CLOCK_SLACK times (plus its polling) before a cell is flagged.
CLOCK_MIN_S = 1.0
CLOCK_SLACK = 3.0


def clock_disagreement(new: dict[str, Any], wall_s: float) -> str:
    """'clock: ...' when a row timed ok reports timed rounds (`timer_s`) its worker's timer
    cannot have counted in the `wall_s` the supervisor saw them take, else ''."""
    timer_s = new.get("timer_s")
    if new.get("status") != "ok" or new.get("clock") or not isinstance(timer_s, (int, float)):
        return ""
    slow = wall_s > CLOCK_MIN_S and timer_s < wall_s / CLOCK_SLACK
    fast = timer_s > CLOCK_SLACK * wall_s + 2 * POLL_S
    if not (slow or fast):
        return ""
    return (f"clock: its timer counted {timer_s:.3g} s of timed rounds that took {wall_s:.3g} s "
            "by bench's own clock (a worker whose clock is not the machine's)")


def _read_heartbeat(path: Path) -> Optional[dict[str, Any]]:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
