"""Call implementations in child processes, one per backend, so a crash costs only its own rows.

An implementation that calls os._exit or segfaults used to take `verify` (and
bench's verify, conventions and precision steps) down with it: nothing
written, and an exit code that read as "an implementation is wrong". Here a
verb's work on one implementation is a *task*, `function(impl, *args)`, that
yields one result per item (a case, a probe) and never raises for the
implementation's faults. What a child sends back is read with `wire.safe_loads`:
plain data only (the harness's own dataclasses, NumPy arrays), never a pickle
that could run code in the parent. `run` gives each backend's implementations to one
child process (`python -c 'harness.core.isolate.child()'`, its own session, tied to
the parent by harness.util.lifeline), which loads the same plugins, runs the task
for each and streams the results back over a pipe; as many backends' children as
the process has usable CPUs run at once (`Isolation.workers`). When the child dies (or
sends nothing for `stall_s`: a hang that even the task's own deadline could
not stop), the verb's `lost(impl, done, why)` supplies the rows of the items
it did not finish, and a fresh child takes the remaining implementations.

A task that raises, or a child that dies before it has loaded the
implementations, is the harness's own failure: `HarnessFailure` (exit code 3).
`isolation=None` runs the same task in this process (unit tests, debugging).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from harness import backends
from harness.core import plugins, wire
from harness.core.registry import REGISTRY, Implementation
from harness.util import cpus, lifeline, reaper

RESULTS_ENV = "PE_HARNESS_ISOLATE_FD"
ROOT = Path(__file__).resolve().parent.parent.parent
POLL_S = 0.2

#: (impl, the results its process sent, why it stopped) -> the rows of the items it did not finish
Lost = Callable[[Implementation, list, str], list]
Done = Callable[[Implementation, list], None]


class HarnessFailure(RuntimeError):
    """The isolation itself failed (not an implementation): the CLI exits with code 3."""


@dataclass(frozen=True)
class Task:
    """What a child runs for each implementation: `function(impl, *args)`, one result per item."""

    function: str                  # "package.module:name", importable in a fresh process
    args: tuple = ()


@dataclass(frozen=True)
class Isolation:
    """How to run children: the plugins that register the implementations, and patience."""

    plugins: tuple[str, ...] = ()
    stall_s: float = 600.0         # longest wait for one result before the child is killed
    start_s: float = 180.0         # longest wait for the child to load the implementations
    workers: int = 1               # backends' children running at once


@dataclass(frozen=True)
class _Request:
    plugins: tuple[str, ...]
    names: tuple[str, ...]
    task: Task


def describe_exit(returncode: int) -> str:
    """'exited with code 3', 'killed by signal SIGSEGV'."""
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


def add_option(parser: argparse.ArgumentParser) -> None:
    """--in-process, for the verbs that call implementations."""
    parser.add_argument("--in-process", action="store_true",
                        help="call implementations in this process, not in one child process per "
                             "backend (for debugging: a crashing implementation then ends the run)")


def from_args(args: argparse.Namespace, stall_s: float) -> Optional[Isolation]:
    """Children loading the verb's --plugin list, unless --in-process."""
    if getattr(args, "in_process", False):
        return None
    return Isolation(tuple(getattr(args, "plugin", None) or ()), stall_s=stall_s,
                     workers=cpus.usable())


def resolve(function: str) -> Callable[..., Iterable[Any]]:
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def run(impls: Sequence[Implementation], task: Task, lost: Lost,
        isolation: Optional[Isolation] = None,
        on_impl_done: Optional[Done] = None) -> dict[str, list]:
    """Each implementation's results, in the order of `impls`; `on_impl_done` as each finishes
    (one call at a time, while up to `isolation.workers` backends' children run at once)."""
    results: dict[str, list] = {}
    one_at_a_time = threading.Lock()

    def finish(impl: Implementation, rows: list) -> None:
        with one_at_a_time:
            results[impl.name] = rows
            if on_impl_done is not None:
                on_impl_done(impl, rows)

    if isolation is None:
        function = resolve(task.function)
        for impl in impls:
            finish(impl, list(function(impl, *task.args)))
    else:
        groups = [_Group([i for i in impls if i.backend == backend], task, lost, isolation, finish)
                  for backend in dict.fromkeys(i.backend for i in impls)]
        with ThreadPoolExecutor(max(1, min(isolation.workers, len(groups)))) as pool:
            for _ in pool.map(_Group.run, groups):    # re-raises a HarnessFailure
                pass
    return {i.name: results[i.name] for i in impls}


class _Group:
    """One backend's implementations, through as many children as their crashes take."""

    def __init__(self, impls: list[Implementation], task: Task, lost: Lost, isolation: Isolation,
                 finish: Done) -> None:
        self.impls, self.task, self.lost = impls, task, lost
        self.isolation, self.finish = isolation, finish

    def run(self) -> None:
        pending = list(self.impls)
        while pending:
            settled = self._attempt(pending)
            if not settled:      # died after loading, before any implementation: give up on them
                for impl in pending:
                    self.finish(impl, self.lost(impl, [], "not run: its isolated process died "
                                                         "before starting it"))
                return
            pending = [i for i in pending if i.name not in settled]

    def _attempt(self, pending: list[Implementation]) -> set[str]:
        """One child over `pending`; returns the names it (or its death) settled."""
        by_name = {i.name: i for i in pending}
        request = _Request(self.isolation.plugins, tuple(by_name), self.task)
        with started("harness.core.isolate:child", request) as (proc, read, tag):
            return _Watch(self, proc, read, by_name, tag).follow()


class _Watch:
    """Reads one child's messages until it finishes, dies or stalls."""

    def __init__(self, group: _Group, proc: subprocess.Popen, fd: int,
                 impls: dict[str, Implementation], tag: dict[str, str]) -> None:
        self.group, self.proc, self.fd, self.impls, self.tag = group, proc, fd, impls, tag
        self.buffer = bytearray()      # grown in place: a large result arrives in many chunks
        self.ready = False
        self.current: Optional[Implementation] = None
        self.rows: list = []
        self.settled: set[str] = set()
        self.refused = ""

    def follow(self) -> set[str]:
        iso = self.group.isolation
        deadline = time.monotonic() + iso.start_s
        why = ""
        while True:
            readable, _, _ = select.select([self.fd], [], [], POLL_S)
            chunk = os.read(self.fd, 1 << 20) if readable else b""
            if chunk:
                self.buffer += chunk
                if self._handle():
                    deadline = time.monotonic() + iso.stall_s
                if self.refused:
                    why = self.refused
                    break
            elif readable or (self.proc.poll() is not None and not pending(self.fd)):
                break                            # end of the pipe, or the child is gone (all read)
            if time.monotonic() > deadline:
                limit = iso.stall_s if self.ready else iso.start_s
                why = f"timeout: no result within {limit:g} s; its process was killed"
                break
        kill(self.proc, self.tag)
        if not self.ready:
            raise HarnessFailure(
                "the isolated process for " + ", ".join(self.impls) + " "
                + (why or describe_exit(self.proc.returncode))
                + " before loading the implementations; see its output above")
        if self.current is not None:
            died = describe_exit(self.proc.returncode)
            why = why or f"its process died during this case ({died})"
            lost = self.group.lost(self.current, list(self.rows), why)
            self._settle(self.current, self.rows + lost)
        return self.settled

    def _handle(self) -> bool:
        """Act on every complete message in the buffer; True when there was one."""
        any_message = False
        while len(self.buffer) >= wire.HEADER.size:
            (size,) = wire.HEADER.unpack_from(self.buffer)
            if len(self.buffer) < wire.HEADER.size + size:
                break
            message = bytes(self.buffer[wire.HEADER.size:wire.HEADER.size + size])
            del self.buffer[:wire.HEADER.size + size]
            try:
                kind, value = wire.safe_loads(message)
            except Exception as exc:     # the judged sent something that is not plain data
                self.refused = f"its process sent a result that is not plain data ({exc})"
                return any_message
            any_message = True
            if kind == "ready":
                self.ready = True
            elif kind == "begin":
                self.current, self.rows = self.impls[value], []
            elif kind == "result":
                self.rows.append(value)
            elif kind == "end":
                self._settle(self.impls[value], self.rows)
            elif kind == "missing":
                self._settle(self.impls[value], self.group.lost(
                    self.impls[value], [], "not registered in a fresh process (register it "
                                          "from a plugin module or file to check it in isolation)"))
            elif kind == "failed":
                raise HarnessFailure(f"isolated task {self.group.task.function} failed:\n{value}")
        return any_message

    def _settle(self, impl: Implementation, rows: list) -> None:
        self.current, self.rows = None, []
        self.settled.add(impl.name)
        self.group.finish(impl, rows)


@contextlib.contextmanager
def started(entry: str, request: Any) -> Iterator[tuple[subprocess.Popen, int, dict[str, str]]]:
    """A child running `entry` ("module:function") in its own session, tied to this process by
    a lifeline, its descendants tagged (harness.util.reaper), `request` pickled on its stdin:
    yields (the process, the read end of its results pipe, its tag), and kills it with
    everything it started afterwards."""
    module, _, function = entry.partition(":")
    read, write = os.pipe()
    tag = reaper.new_tag()
    with lifeline.Lifeline() as line:
        env = {**os.environ, **line.env, **tag, RESULTS_ENV: str(write),
               "PYTHONPATH": python_path()}
        try:
            proc = subprocess.Popen([sys.executable, "-c", f"from {module} import {function}; "
                                                           f"{function}()"],
                                    stdin=subprocess.PIPE, env=env, pass_fds=(*line.fds, write),
                                    start_new_session=True)
        finally:
            os.close(write)
            line.started()
        try:
            send_request(proc, request)
            yield proc, read, tag
        finally:
            kill(proc, tag)
            os.close(read)


def pending(fd: int) -> bool:
    """Whether `fd` has data (or its end) to read now: what a child wrote before it exited."""
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def python_path() -> str:
    """PYTHONPATH for a child: this source tree first, so it imports the same harness."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def send_request(proc: subprocess.Popen, request: Any) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        proc.stdin.close()
    except BrokenPipeError:         # died at once: the watch reports how
        pass


def kill(proc: subprocess.Popen, tag: Optional[dict[str, str]] = None) -> None:
    """Kill the child and everything it started (harness.util.reaper), then reap it."""
    reaper.kill_tree(proc.pid, tag)
    proc.wait()


# -- the child -------------------------------------------------------------------------

def child() -> None:
    """A child's whole life: load the implementations, run the task for each, report, exit."""
    lifeline.watch()
    reaper.adopt_orphans()
    out = int(os.environ.pop(RESULTS_ENV))
    request: _Request = pickle.load(sys.stdin.buffer)
    send = wire.sender(out)

    try:
        plugins.load_all(request.plugins)
        impls = {i.name: i for i in REGISTRY.all()}
        for backend in {impls[n].backend for n in request.names if n in impls}:
            prepare = backends.get(backend).prepare
            if prepare is not None:
                prepare()
        function = resolve(request.task.function)
        send("ready")
        for name in request.names:
            impl = impls.get(name)
            if impl is None:
                send("missing", name)
                continue
            send("begin", name)
            for result in function(impl, *request.task.args):
                send("result", result)
            send("end", name)
    except Exception:
        send("failed", traceback.format_exc())
        exit_now(1)
    exit_now(0)


def exit_now(code: int) -> None:
    """Exit now, its results flushed: a stray thread (non-daemon included) never delays it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)
