"""The supervisor's own clock spans a cell's timed rounds, from the worker's `timing` heartbeat
to its `timed` one: the untimed checks that follow the rounds (a large result compared, the call
on changed inputs) are not charged to the worker's timer, and a timer that undercounts the
rounds themselves is still caught."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from harness.bench.cells import Cell
from harness.bench.settings import Limits, Timing
from harness.bench.supervisor import Supervisor

ROOT = Path(__file__).resolve().parent.parent

#: A stand-in worker: announces the rounds, ends them `rounds_s` later (its timer counting
#: `timer_s` of them), spends `after_s` on untimed checks, then writes the row.
FAKE_WORKER = textwrap.dedent("""
    import json, os, sys, time
    from harness.bench.cells import Cell, Outcome, row
    from harness.runs import journal
    heartbeat, run_dir, rounds_s, timer_s, after_s = sys.argv[1:]
    cell = Cell("fake", "numpy", "cpu", "table", "paper", 8, 8, "float32", 1)
    def beat(phase, n):
        with open(heartbeat + ".tmp", "w") as f:
            json.dump({"key": cell.key, "time": time.time(), "pid": os.getpid(),
                       "phase": phase, "beat": n}, f)
        os.replace(heartbeat + ".tmp", heartbeat)
    beat("", 1); beat("timing", 2)
    time.sleep(float(rounds_s))
    beat("timed", 3)
    time.sleep(float(after_s))
    line = {**row(cell, Outcome("ok", median_s=1e-3, iqr_s=1e-5, timer_s=float(timer_s))),
            "beat": 3}
    journal.append(os.path.join(run_dir, journal.FILENAME), line)
""")


def watched(tmp_path: Path, rounds_s: float, timer_s: float, after_s: float) -> dict:
    """The row the supervisor passed on for one fake worker's cell."""
    rows: list[dict] = []
    supervisor = Supervisor(tmp_path, (), Timing(), Limits(), rows.append)
    heartbeat = tmp_path / "work" / "fake.heartbeat"
    cell = Cell("fake", "numpy", "cpu", "table", "paper", 8, 8, "float32", 1)
    proc = subprocess.Popen([sys.executable, "-c", FAKE_WORKER, str(heartbeat), str(tmp_path),
                             str(rounds_s), str(timer_s), str(after_s)], cwd=ROOT)
    supervisor.worker_pid = proc.pid
    supervisor._watch(proc, heartbeat, {cell.key: cell})
    proc.wait(timeout=60)
    assert len(rows) == 1, rows
    return rows[0]


def test_untimed_checks_after_the_rounds_do_not_count_against_the_workers_timer(tmp_path):
    row = watched(tmp_path, rounds_s=0.5, timer_s=0.5, after_s=1.5)
    assert not row.get("clock"), row["clock"]


def test_a_timer_that_undercounts_the_rounds_is_caught(tmp_path):
    row = watched(tmp_path, rounds_s=1.5, timer_s=0.3, after_s=0.0)
    assert row.get("clock", "").startswith("clock: its timer counted 0.3 s"), row
