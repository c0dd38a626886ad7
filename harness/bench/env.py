"""Who measured what, where: the run id and `env.json` (versions, CPU, cores, GPU, git commit).

Nothing here imports a backend: versions come from package metadata and the GPU
from nvidia-smi and the CUDA driver, so recording the environment costs no thread pool or CUDA
context in the parent. Git is only read (`--no-optional-locks`: not even the
index is refreshed).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Optional, Sequence

import psutil

from harness import backends
from harness.backends import cuda_driver
from harness.util import cpus, io

FILENAME = "env.json"
#: label: distributions that provide it, first found wins; the backends' come from their adapters
PACKAGES = {
    "pandas": ("pandas",), "matplotlib": ("matplotlib",), "pytest": ("pytest",),
    "pytest-benchmark": ("pytest-benchmark",), "psutil": ("psutil",),
    **{label: dists for b in backends.ADAPTERS.values() for label, dists in b.distributions.items()},
}
ROOT = Path(__file__).resolve().parent.parent.parent


def _git(*args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, text=True,
                              capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def run_id() -> str:
    """Sortable by time, tied to the commit: 20261122-153000-1a2b3c4."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{_git('rev-parse', '--short', 'HEAD') or 'nogit'}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: nvidia-smi fields recorded for each GPU: clocks now and at most, power cap, persistence
GPU_QUERY = ("name", "driver_version", "memory.total", "clocks.sm", "clocks.max.sm", "clocks.mem",
             "clocks.max.mem", "power.limit", "persistence_mode", "pstate")


def _nvidia_smi() -> list[dict[str, str]]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(GPU_QUERY)}",
                               "--format=csv,noheader"], text=True, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    return [dict(zip(GPU_QUERY, (v.strip() for v in line.split(","))))
            for line in done.stdout.splitlines() if line.strip()]


def gpus() -> list[dict[str, Any]]:
    """Every GPU nvidia-smi lists, with device 0's L2 size, SM count and theoretical DRAM
    bandwidth from the driver (no library context: nothing is imported)."""
    found: list[dict[str, Any]] = [dict(gpu) for gpu in _nvidia_smi()]
    if found:
        found[0].update(cuda_driver.device_facts())
    return found


def version(label: str) -> Optional[str]:
    for dist in PACKAGES[label]:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def machine_label(cores: int, gpu: Optional[str] = None) -> str:
    """What the report's titles call the machine: the GPU first when there is one."""
    host = f"{cpu_model()} x{cores}"
    return f"{gpu} ({host})" if gpu else host


def git_dirty() -> Optional[bool]:
    """Whether tracked files differ from the commit (None outside git). Untracked files do
    not count: a run's own directory under results/ is no part of any commit."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


def collect(run: str, argv: Sequence[str], cores: int) -> dict[str, Any]:
    found = gpus()
    gpu = ", ".join(g["name"] for g in found) or None
    return {
        "run_id": run,
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": git_dirty(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        **cpus.describe(),          # affinity and quota: what the run's threads could use
        "memory_bytes": psutil.virtual_memory().total,
        "gpu": gpu,
        "gpus": found,
        "versions": {label: version(label) for label in PACKAGES},
        "machine": machine_label(cores, gpu),
        "argv": list(argv),
    }


def write(run_dir: Path, env: dict[str, Any]) -> Path:
    return io.write_text(Path(run_dir) / FILENAME, json.dumps(env, indent=2) + "\n")


def read(run_dir: Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / FILENAME).read_text())
