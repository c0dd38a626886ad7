"""Child processes die with the process that started them, however it dies.

A SIGKILL of `bench` used to leave its workers (each in its own session)
timing cells, and a `--resume` then measured the same cells beside them. Two
mechanisms, because neither covers every case alone:

- Linux: the child asks the kernel for SIGKILL when its parent dies
  (`prctl(PR_SET_PDEATHSIG)`), which works even while an implementation holds
  the GIL in a C loop. (It fires when the parent's *thread* that started the
  child exits: start children from a thread that lives as long as they do.)
- Anywhere: the parent keeps the write end of a pipe whose read end the child
  inherits; the kernel closes it when the parent dies, and a watchdog thread
  in the child, blocked on the read, then kills the child (with its process
  group when it leads one, so a worker's own helpers go too).

Parent: `with Lifeline() as line: Popen(..., env={**env, **line.env},
pass_fds=line.fds)`, then `line.started()`. Child: `watch()` first thing (the
CLI does; bench's workers through harness.bench.lifeline_plugin).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from typing import Any

ENV = "PE_HARNESS_LIFELINE"
PR_SET_PDEATHSIG = 1


class Lifeline:
    """The parent's end: a pipe whose write end only this process holds."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()      # both close-on-exec until passed on

    @property
    def env(self) -> dict[str, str]:
        """What the child's environment needs so that `watch()` finds the pipe."""
        return {ENV: f"{os.getpid()}:{self._read}"}

    @property
    def fds(self) -> tuple[int, ...]:
        """For Popen's pass_fds."""
        return (self._read,)

    def started(self) -> None:
        """The child has its copy of the read end; the parent's is no longer needed."""
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def close(self) -> None:
        """Cut the line (the child, if still running, kills itself)."""
        self.started()
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def __enter__(self) -> "Lifeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def watch() -> bool:
    """In a child started with a Lifeline: die with the parent. False when not started so.

    The variable is removed from the environment, so this process's own children
    never see a pipe that was not passed to them.
    """
    value = os.environ.pop(ENV, None)
    if not value:
        return False
    parent, fd = (int(part) for part in value.split(":"))
    _ask_kernel()
    if os.getppid() != parent:        # the parent died before the kernel was asked
        _die()
    threading.Thread(target=_wait_for_eof, args=(fd,), daemon=True,
                     name="pe-harness-lifeline").start()
    return True


def _ask_kernel() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):   # no prctl: the pipe still works
        pass


def _wait_for_eof(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    _die()


def _die() -> None:
    """SIGKILL this process, and its process group when it leads one (a worker's session)."""
    try:
        sys.stderr.write("pe-harness: the parent process is gone; stopping\n")
        sys.stderr.flush()
    except Exception:
        pass
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
