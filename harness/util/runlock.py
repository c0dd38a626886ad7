"""One writer per run directory: a unique directory per run, and a lock while a run writes to it.

Two sweeps writing one journal measure the same cells twice and keep whichever
row came last. A run holds `fcntl.flock` on RUN_DIR/.run.lock from creation (or
--resume) to its last post-step; its worker processes inherit the lock, so it
is held until every process of the run is gone, and released by the kernel
however they end: a lock left by a dead run never blocks. The file's text
(pid, command) only explains who holds it.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from harness.util.exitcodes import UsageError

FILENAME = ".run.lock"


class RunLocked(UsageError):
    """Another live process writes to this run directory (a usage error, exit code 2)."""


def create_unique(parent: Path, name: str) -> Path:
    """parent/name, or parent/name-2, -3 ... when a run started in the same second has it."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = parent / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"{parent}: 999 run directories named {name}*")


class RunLock:
    """An exclusive lock on a run directory, taken at once or refused with who holds it."""

    def __init__(self, run_dir: Path, argv: Sequence[str] = ()) -> None:
        self.path = Path(run_dir) / FILENAME
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(self._fd)
            os.close(self._fd)
            raise RunLocked(f"{run_dir} is in use by another run ({holder}); wait for it to "
                            "finish or stop it, then --resume") from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, (f"pid {os.getpid()}, started {time.strftime('%H:%M:%S')}: "
                            f"{' '.join(argv or sys.argv)}\n").encode())

    @property
    def fds(self) -> tuple[int, ...]:
        """For a child's pass_fds: the lock then lives as long as that child too."""
        return (self._fd,) if self._fd >= 0 else ()

    def release(self) -> None:
        """Let go (the file stays, emptied: deleting it could give two processes "the" lock)."""
        if self._fd >= 0:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)       # the lock goes with the last copy of this descriptor
            self._fd = -1

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read(fd: int) -> str:
    try:
        text = os.pread(fd, 500, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return (text or "holder unknown") + ", or its worker processes"
