"""Every process an implementation starts ends with the child that ran it, setsid or not.

Killing a child's process group misses what left the group (`setsid`) and
what was orphaned (a double fork re-parents to init). Three layers, each
cheap:

- the child (an isolated verify child, a bench worker) makes itself a
  *subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphaned descendant is
  re-parented to it, not to init, so it stays in the child's process tree;
- `kill_tree` kills that whole tree (psutil's descendants, read before the
  first kill), the group and the child itself;
- every child carries a `tag` in its environment, inherited by whatever it
  starts; `kill_tagged` sweeps the processes holding it, for a descendant that
  escaped both (its subreaper was SIGKILLed first).
A process that clears its environment after escaping the tree is out of reach:
a plugin is code you run (docs/design.md, the threat model).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import uuid

import psutil

TAG_ENV = "PE_HARNESS_TREE"
PR_SET_CHILD_SUBREAPER = 36


def new_tag() -> dict[str, str]:
    """The environment entry that marks one child's descendants."""
    return {TAG_ENV: uuid.uuid4().hex}


def adopt_orphans() -> bool:
    """In a child: keep orphaned descendants in this process's tree (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_tree(pid: int, tag: dict[str, str] | None = None) -> list[int]:
    """SIGKILL `pid`, every descendant of it, its process group and (with `tag`) every process
    carrying the tag; returns the pids killed besides `pid`."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    for victim in descendants:
        _kill(victim)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    killed = [p.pid for p in descendants]
    if tag:
        killed += kill_tagged(tag[TAG_ENV], exclude=pid)
    return killed


def kill_tagged(value: str, exclude: int = -1) -> list[int]:
    """SIGKILL every process of this user whose environment holds TAG_ENV=value."""
    killed = []
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid in (me, exclude):
            continue
        try:
            if proc.environ().get(TAG_ENV) == value:
                _kill(proc)
                killed.append(proc.pid)
        except psutil.Error:
            continue
    return killed


def _kill(proc: psutil.Process) -> None:
    try:
        proc.kill()
    except psutil.Error:
        pass
