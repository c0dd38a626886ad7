"""One writer per run directory, and processes that die with their parent.

A SIGKILL of `bench` used to leave its workers measuring, and a `--resume`
then measured the same cells beside them. The end-to-end test kills a real
sweep mid-cell; the unit tests cover the lock and the lifeline on their own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.bench import env, sweep
from harness.runs import journal
from harness.util import runlock
from harness.util.lifeline import Lifeline

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--no-post", "--threads", "1", "--dtypes", "float32", "--workloads", "table",
        "--lengths", "8", "--d-models", "8", "--max-time", "0.01", "--timeout-s", "120",
        "--attempts", "1"]   # no cell measured again for load: each key once in the journal
SLOW = '''
import os, time
import numpy as np
from harness import reference, register

@register(name="slow-kill", backend="numpy")
def build(spec):
    pid_file = os.environ.get("SLOW_PID_FILE")
    if pid_file:                      # the first sweep: announce the worker, then stay in the cell
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(60)
    return lambda: reference(spec).astype(spec.dtype)
'''


def gone(pid: int, within_s: float) -> bool:
    """Whether `pid` has exited (a zombie counts: it runs nothing) within `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def wait_for(path: Path, within_s: float) -> str:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.1)
    raise AssertionError(f"{path} did not appear within {within_s} s")


@pytest.mark.e2e
def test_sigkill_of_bench_stops_its_workers_and_resume_waits_for_them(tmp_path):
    plugin, pid_file, out = tmp_path / "slow.py", tmp_path / "worker.pid", tmp_path / "runs"
    plugin.write_text(SLOW)
    cmd = [sys.executable, "-m", "harness", "bench", "--out", str(out), *TINY,
           "--plugin", str(plugin), "--only", "slow-kill"]
    parent = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "SLOW_PID_FILE": str(pid_file)})
    worker = -1
    try:
        worker = int(wait_for(pid_file, 90))
        run_dir = next(out.glob(f"*/{journal.FILENAME}")).parent   # the roofs ran first
        resume = [sys.executable, "-m", "harness", "bench", "--out", str(out), *TINY,
                  "--plugin", str(plugin), "--only", "slow-kill", "--resume", str(run_dir)]
        refused = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
        assert "in use by another run" in refused.stderr and f"pid {parent.pid}" in refused.stderr

        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert gone(worker, 10), "the worker outlived its SIGKILLed parent"

        done = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    finally:
        for pid in (parent.pid, worker):
            if pid > 0 and not gone(pid, 0):
                os.kill(pid, signal.SIGKILL)
    keys = [r["key"] for r in journal.read_all(run_dir / journal.FILENAME)]
    assert len(keys) == len(set(keys)) == 3      # slow-kill and the two roofs, once each


def test_a_second_lock_is_refused_until_the_first_is_released(tmp_path):
    first = runlock.RunLock(tmp_path, ["bench", "--quick"])
    with pytest.raises(runlock.RunLocked, match=f"in use by another run \\(pid {os.getpid()}"):
        runlock.RunLock(tmp_path)
    first.release()
    with runlock.RunLock(tmp_path):
        pass


def test_a_lock_left_by_a_dead_process_does_not_block(tmp_path):
    (tmp_path / runlock.FILENAME).write_text("pid 999999, started 00:00:00: bench\n")
    child = subprocess.run([sys.executable, "-c", (
        "import sys; from harness.util.runlock import RunLock; "
        f"RunLock({str(tmp_path)!r}); sys.exit(0)    # dies holding it")], cwd=ROOT, timeout=60)
    assert child.returncode == 0
    with runlock.RunLock(tmp_path) as lock:
        assert f"pid {os.getpid()}" in lock.path.read_text()


def test_children_given_the_lock_hold_it_after_the_parent_lets_go(tmp_path):
    lock = runlock.RunLock(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             pass_fds=lock.fds)
    try:
        lock.release()
        with pytest.raises(runlock.RunLocked):
            runlock.RunLock(tmp_path)
    finally:
        child.kill()
        child.wait()
    runlock.RunLock(tmp_path).release()


def test_two_runs_in_the_same_second_get_their_own_directories(tmp_path, monkeypatch):
    monkeypatch.setattr(env, "run_id", lambda: "20990101-000000-abcdef0")
    opts = type("Opts", (), {"resume": None, "out": tmp_path})()
    first = sweep.open_run(opts, ["bench"], 1)
    second = sweep.open_run(opts, ["bench"], 1)
    try:
        assert first.path.name == "20990101-000000-abcdef0"
        assert second.path.name == second.run_id == "20990101-000000-abcdef0-2"
        assert env.read(second.path)["run_id"] == second.run_id
    finally:
        first.lock.release()
        second.lock.release()


LIFELINE_PARENT = '''
import os, subprocess, sys, time
from harness.util.lifeline import Lifeline
CHILD = "import harness.util.lifeline as l, time; %s; l.watch(); time.sleep(60)"
lines = []
for patch in ("pass", "l._ask_kernel = lambda: None"):   # both mechanisms, then the pipe alone
    lines.append(Lifeline())                             # open until this process dies
    child = subprocess.Popen([sys.executable, "-c", CHILD % patch],
                             env={**os.environ, **lines[-1].env}, pass_fds=lines[-1].fds)
    lines[-1].started()
    print(child.pid, flush=True)
time.sleep(60)
'''


def test_children_on_a_lifeline_die_with_their_parent():
    parent = subprocess.Popen([sys.executable, "-c", LIFELINE_PARENT], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    children = []
    try:
        assert parent.stdout is not None
        children = [int(parent.stdout.readline()) for _ in range(2)]
        time.sleep(1.5)                   # both are past watch(): importing takes a moment
        assert not any(gone(pid, 0) for pid in children)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert [gone(pid, 10) for pid in children] == [True, True]
    finally:
        for pid in children:
            if not gone(pid, 0):
                os.kill(pid, signal.SIGKILL)


def test_a_lifeline_is_only_watched_by_the_child_it_was_made_for():
    with Lifeline() as line:
        assert line.env["PE_HARNESS_LIFELINE"].startswith(f"{os.getpid()}:")
        assert len(line.fds) == 1
    import harness.util.lifeline as lifeline

    assert lifeline.watch() is False      # not started with one: nothing to watch


def test_a_standalone_verb_writing_into_a_live_run_is_refused_and_takes_the_lock_otherwise(
        tmp_path, capsys):
    import harness.cli

    run = tmp_path / "run"
    run.mkdir()
    (run / journal.FILENAME).write_text("")
    argv = ["verify", "--only", "lib-xlm", "--quick", "--in-process", "--out", str(run)]
    with runlock.RunLock(run, ["bench (a live run)"]):
        assert harness.cli.main(argv) == 2
        assert "in use by another run (pid" in capsys.readouterr().err
        assert not (run / "verify.csv").exists()
    assert harness.cli.main(argv) == 0           # released: it runs, holding the lock itself
    assert (run / "verify.csv").exists()
    with runlock.RunLock(run):                    # and let go of it when done
        pass
