"""How a device cell is timed: its mode, the timer, and what runs between rounds.

Kernel launches are asynchronous, so a GPU call is only measured once the device
is idle at both ends: every device cell's pytest-benchmark timer synchronises
the device before reading the clock (`clock`), and the callable itself is
followed by a sync (`synced`), so one call is one round. Three modes, recorded
in every row:

- `sync`: call + device sync per round, L2 warm from the previous round: the
  latency a user sees from Python, launch overhead included.
- `flush`: the same, with an untimed write of twice the L2 size before every round
  (an 8192 x 1024 float32 table fits in an H100's 50 MB L2): the cold-cache time.
- `graph`: `graph_calls` back-to-back calls captured as one CUDA graph and
  replayed; pytest-benchmark runs replays between two syncs, and every time is
  divided by the calls in a replay. One replay is about GRAPH_ROUND_S of work, so
  the host's launch of a graph (microseconds) does not set the pace of small
  kernels: the time per call is the kernels' time, and sync minus graph is the
  launch overhead.

CPU cells have no mode (""): one call per round, perf_counter.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from harness import backends
from harness.backends import cuda_driver

MODES = ("sync", "flush", "graph")
#: --quick keeps the latency and the kernel time, not the cold-cache repeat
QUICK_MODES = ("sync", "graph")
MAX_FLUSH_ROUNDS = 200
#: graph mode: calls captured in one graph, enough for a replay of about GRAPH_ROUND_S of
#: kernels, at most MAX_GRAPH_CALLS of them (each may keep its result's memory in the graph)
GRAPH_ROUND_S = 1e-3
MAX_GRAPH_CALLS = 64
#: Rounds of an in-place kernel, each after its untimed reset (pedantic rounds, no calibration).
MAX_FRESH_ROUNDS = 2000


class NotCapturable(RuntimeError):
    """The call cannot be recorded as a CUDA graph (it syncs, copies to the host, ...)."""


def modes_for(backend: str, device: str, wanted: tuple[str, ...] = MODES) -> tuple[str, ...]:
    """The modes a cell of this backend on this device is timed in ("" on the CPU)."""
    if device == "cpu":
        return ("",)
    capture = backends.get(backend).capture is not None
    return tuple(m for m in wanted if m != "graph" or capture)


def synced(fn: Callable[[], Any], device: str, backend: str) -> Callable[[], Any]:
    """`fn` followed by a wait for its result where the backend dispatches asynchronously (JAX,
    even on the CPU) and a device sync, so that a call's time covers the work it started."""
    wait = backends.get(backend).wait
    if device == "cpu" and wait is None:
        return fn

    def call() -> Any:
        out = fn()
        if wait is not None:
            wait(out)
        if device != "cpu":
            cuda_driver.synchronize()
        return out

    return call


def clock(device: str) -> Callable[[], float]:
    """pytest-benchmark's timer for cells on `device`."""
    return time.perf_counter if device == "cpu" else cuda_driver.synced_clock


def graph_calls(call_s: float) -> int:
    """Calls to capture in one graph when one synced call takes `call_s` (an upper bound on
    its kernels' time, launch included)."""
    return max(1, min(MAX_GRAPH_CALLS, math.ceil(GRAPH_ROUND_S / max(call_s, 1e-9))))


@dataclass(frozen=True)
class Rounds:
    """What pytest-benchmark is given: the target, for `flush` the setup and round count, and
    how many of the cell's calls one call of the target makes (its times are divided by it)."""

    target: Callable[[], Any]
    setup: Optional[Callable[[], None]] = None
    rounds: int = 0             # 0: pytest-benchmark calibrates and chooses
    calls: int = 1
    warmup: int = 1             # untimed rounds first (pedantic rounds only)

    def run(self, benchmark: Any) -> Any:
        """Time the rounds; returns what a call under pytest-benchmark returned (its last round,
        or one more call it makes with its machinery on the stack)."""
        if not self.rounds:
            return benchmark(self.target)
        return benchmark.pedantic(self.target, setup=self.setup, rounds=self.rounds,
                                  iterations=1, warmup_rounds=self.warmup)


def rounds_for(mode: str, fn: Callable[[], Any], backend: str, device: str,
               call_s: float, max_time: float, min_rounds: int,
               fresh: Optional[Callable[[], None]] = None) -> Rounds:
    """The timed target of one cell in `mode`; `call_s` is one warm synced call's time. `fresh`
    (an in-place kernel's reset) runs before every round, outside the timed region; in `graph`
    mode once, before the capture: each replay then rotates the last one's output where it
    lies, the same bytes read and written by the same instructions as fresh inputs (a rotation
    keeps values in range, and the replays' values are not judged: the untimed calls were)."""
    if mode == "graph":
        if fresh is not None:
            synced(fresh, device, backend)()
        capture = backends.get(backend).capture
        calls = graph_calls(call_s)
        try:
            return Rounds(capture(fn, calls), calls=calls)
        except Exception as exc:
            raise NotCapturable(f"{type(exc).__name__}: {exc}".replace("\n", " ")) from exc
    call = synced(fn, device, backend)
    count = int(max_time / max(call_s, 1e-7))
    if mode == "flush":
        flush = cuda_driver.l2_flush()
        setup = flush if fresh is None else _both(synced(fresh, device, backend), flush)
        return Rounds(call, setup, min(max(count, min_rounds), MAX_FLUSH_ROUNDS))
    if fresh is not None:
        return Rounds(call, synced(fresh, device, backend), min(max(count, min_rounds), MAX_FRESH_ROUNDS))
    if slow(call_s, max_time, min_rounds):
        return Rounds(call, rounds=min_rounds, warmup=0)
    return Rounds(call)


def slow(call_s: float, max_time: float, min_rounds: int) -> bool:
    """Whether a call takes so long that `min_rounds` rounds fill `max_time`: pytest-benchmark's
    calibration (a call) would only confirm min_rounds, and its closing call (another) returns
    what a round already did. Such a cell's rounds run as pedantic rounds instead: the same
    rounds, timed by the same timer, two calls sooner (at the largest sizes a call takes 20 ms
    to a second; the first, warm and peak-memory calls have warmed it already)."""
    return call_s * min_rounds >= max_time


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def setup() -> None:
        first()
        second()

    return setup
