"""A judge in a process of its own, for a callable that runs in the caller's process.

`check_callable` calls the user's function where the user called it (its
thread-local settings apply), so the function could patch what a judge in
that process would use (numpy, the harness's comparison). The verdict is made
instead by one long-lived child (`python -c 'harness.core.apart.serve()'`,
started on first use, tied to this process by harness.util.lifeline) that
imports no implementation: it receives the copies of what the callable
returned (harness.core.observe) and the inputs it was given, computes the
reference and tolerance itself, and sends back the Check. Both directions
carry plain data only (`wire.safe_loads`).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from typing import Any, Optional

from harness.core import handover, isolate, wire
from harness.core.catalog import Entry
from harness.core.checks import Check, expect, judge
from harness.core.observe import Observation
from harness.util import lifeline

_LOCK = threading.Lock()
_JUDGE: dict[str, Any] = {}


def verdict(impl: Entry, spec: Any, args: tuple, seen: Observation) -> Check:
    """The judge child's Check on `seen` (one child per process, restarted if it died)."""
    request = pickle.dumps((impl, spec, args, seen), protocol=pickle.HIGHEST_PROTOCOL)
    with _LOCK:
        for attempt in (1, 2):
            proc = _judge_process()
            try:
                _write(proc.stdin, request)
                answer = _read(proc.stdout)
            except (OSError, EOFError):
                answer = None
            if isinstance(answer, Check):
                return answer
            _stop()
        raise isolate.HarnessFailure("the judge process failed twice")


def _judge_process() -> subprocess.Popen:
    proc: Optional[subprocess.Popen] = _JUDGE.get("proc")
    if proc is not None and proc.poll() is None:
        return proc
    line = lifeline.Lifeline()
    env = {**os.environ, **line.env, "PYTHONPATH": isolate.python_path()}
    proc = subprocess.Popen([sys.executable, "-c", "from harness.core.apart import serve; serve()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                            pass_fds=line.fds, start_new_session=True)
    line.started()
    _JUDGE.update(proc=proc, line=line)     # the line lives as long as this process wants it
    return proc


def _stop() -> None:
    proc, line = _JUDGE.pop("proc", None), _JUDGE.pop("line", None)
    if proc is not None:
        isolate.kill(proc)
    if line is not None:
        line.close()


def _write(stream: Any, data: bytes) -> None:
    stream.write(wire.HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream: Any) -> Any:
    head = stream.read(wire.HEADER.size)
    if len(head) < wire.HEADER.size:
        raise EOFError("the judge process closed its output")
    (size,) = wire.HEADER.unpack(head)
    return wire.safe_loads(stream.read(size))


def serve() -> None:
    """The judge child: one Check per request, until its parent closes the pipe."""
    lifeline.watch()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr               # nothing else may write into the answers
    while True:
        try:
            impl, spec, args, seen = _read(source)
        except EOFError:
            return
        check = judge(impl, spec, seen,
                      lambda n=0: expect(impl.workload, spec, handover.variant(args, n)))
        _write(sink, pickle.dumps(check, protocol=pickle.HIGHEST_PROTOCOL))
