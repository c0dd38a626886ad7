"""Run a call with a time limit, in the caller's own thread, so one hanging call cannot stall a run.

The call runs where it was made: the caller's thread-local state (torch.no_grad,
the current CUDA device and stream) applies to it, and nothing keeps running
after it is abandoned. In the main thread a SIGALRM timer interrupts it at
the deadline (`CallTimeout`, raised inside the call). What a signal cannot
interrupt - a C loop that holds the GIL, a call from another thread, where
Python allows no signal handler - is waited out and reported as a timeout
when it returns late; the isolated children (harness.core.isolate) are also
killed from outside when they stall. `seconds=inf` sets no timer.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from typing import Any, Callable


class CallTimeout(Exception):
    """The call did not return within its limit."""


def call_with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    """`fn()`, or CallTimeout when it runs past `seconds` (interrupted where a signal can)."""
    if math.isnan(seconds) or seconds <= 0:
        raise ValueError(f"seconds must be > 0 (inf for no limit), got {seconds}")
    if math.isinf(seconds):
        return fn()
    if threading.current_thread() is not threading.main_thread():
        return _late(fn, seconds)
    return _alarmed(fn, seconds)


def _late(fn: Callable[[], Any], seconds: float) -> Any:
    """Off the main thread: no interruption, but an overrun is still a timeout."""
    start = time.monotonic()
    value = fn()
    if time.monotonic() - start > seconds:
        raise CallTimeout(f"did not return within {seconds:g} s")
    return value


def _alarmed(fn: Callable[[], Any], seconds: float) -> Any:
    """A one-shot ITIMER_REAL around the call; an outer timer (a nested deadline) is put back
    with what it had left."""
    armed = [True]

    def expire(_signum: int, _frame: Any) -> None:
        if armed[0]:
            armed[0] = False
            raise CallTimeout(f"did not return within {seconds:g} s")

    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    previous = signal.signal(signal.SIGALRM, expire)
    start = time.monotonic()
    limit = min(seconds, outer_left) if outer_left > 0 else seconds
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        value = fn()
        armed[0] = False
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:   # the outer deadline's own handler fires when its time is up
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - start),
                                                     1e-6))
    if time.monotonic() - start > seconds:   # ran on in C past the timer: still too late
        raise CallTimeout(f"did not return within {seconds:g} s")
    return value
