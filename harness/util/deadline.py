"""Run a call with a time limit, so one hanging implementation cannot stall a run.

The call runs in a daemon thread; when it overruns, the caller gets
`CallTimeout` and moves on (the thread is abandoned and dies with the process).
Bench isolates harder, in subprocesses; verify needs only this.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class CallTimeout(Exception):
    """The call did not return within its limit."""


def call_with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="pe-harness-call")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise CallTimeout(f"did not return within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]
