"""The CPUs this process may use: its affinity, capped by its cgroup's CPU quota.

`os.cpu_count()` counts the machine. Under `taskset`, a container's CPU limit or a CI
runner's cgroup a process may run on fewer: a sweep sized by the machine would time its
"all cores" cells oversubscribed and then flag them because no core was free. So every
thread count comes from `usable()`, and env.json records the pieces (`describe()`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Optional

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def affinity() -> list[int]:
    """The CPUs the scheduler may run this process on (all of them where it cannot say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return list(range(os.cpu_count() or 1))


def quota(root: Path = CGROUP_ROOT, membership: Path = PROC_CGROUP) -> Optional[float]:
    """CPUs' worth of time per period the cgroup grants (cgroup v2 `cpu.max`, v1
    `cpu.cfs_quota_us`), the tightest along the path to the root; None when unlimited or
    unknown."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":                                   # v2: one unified hierarchy
            limits += [_v2(d / "cpu.max") for d in _up(root, path)]
        elif "cpu" in controllers.split(","):                   # v1: the cpu controller's own
            base = root / controllers
            base = base if base.is_dir() else root / "cpu"
            limits += [_v1(d) for d in _up(base, path)]
    found = [q for q in limits if q is not None]
    return min(found) if found else None


def usable() -> int:
    """Threads worth running: the affinity's CPUs, no more than the quota (rounded up)."""
    cores = len(affinity())
    limit = quota()
    return max(1, min(cores, math.ceil(limit)) if limit else cores)


def describe() -> dict[str, Any]:
    """For env.json: the machine's CPUs, this process's affinity and quota, and what is usable."""
    return {"cpus_machine": os.cpu_count(), "cpus_affinity": len(affinity()),
            "cpu_quota": quota(), "cpus_usable": usable()}


def _up(root: Path, path: str) -> list[Path]:
    """root/path and each folder above it up to root."""
    here = root / path.strip("/")
    return [here, *[p for p in here.parents if p.is_relative_to(root)]]


def _v2(path: Path) -> Optional[float]:
    try:
        limit, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if limit == "max" else int(limit) / int(period)


def _v1(folder: Path) -> Optional[float]:
    try:
        limit = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if limit <= 0 or period <= 0 else limit / period
