"""Peak-memory meters for the host, shared by the CPU backends.

- `tracemalloc` for NumPy, Numba and pure Python: NumPy reports its buffers to
  it, so the peak includes every temporary of the call.
- `rss-peak` for libraries that allocate outside tracemalloc's sight (torch and
  TF on CPU), on Linux: the kernel's high-water mark of resident memory (VmHWM),
  reset just before the call through /proc/self/clear_refs, minus the resident
  memory before it (bench hands malloc's free pages back first: harness.util.heap, a timing
  process's heap keeps them). Temporaries freed within the call count; memory a library
  reuses from its own pool does not, so it is a lower bound on what the call used.
- `rss-delta` where that reset is not possible: resident memory after the call,
  result still alive, minus before; it misses temporaries freed within the call.

And `host_input`: the inputs a host backend's implementation is handed (NumPy copies).
"""

from __future__ import annotations

import functools
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from harness.backends.base import Call

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


def _tracemalloc(fn: Call) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return max(0, peak - before)


def _rss_delta(fn: Call) -> int:
    import psutil

    process = psutil.Process()
    before = process.memory_info().rss
    result = fn()
    after = process.memory_info().rss
    del result
    return max(0, after - before)


def _status_bytes(field: str) -> int:
    """A `VmXXX:  1234 kB` line of /proc/self/status, in bytes."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"{field} missing from {STATUS}")


def _reset_peak() -> None:
    CLEAR_REFS.write_text("5")   # 5: reset the peak resident set size to the current one


@functools.cache
def can_reset_peak() -> bool:
    try:
        _reset_peak()
        return _status_bytes("VmHWM") > 0
    except OSError:
        return False


def _rss_peak(fn: Call) -> int:
    _reset_peak()
    before = _status_bytes("VmRSS")
    result = fn()
    peak = _status_bytes("VmHWM")
    del result
    return max(0, peak - before)


def tracemalloc_peak(fn: Call) -> tuple[int, str]:
    return _tracemalloc(fn), "tracemalloc"


def resident_peak(fn: Call) -> tuple[int, str]:
    """rss-peak where /proc allows resetting the high-water mark, else rss-delta."""
    if can_reset_peak():
        return _rss_peak(fn), "rss-peak"
    return _rss_delta(fn), "rss-delta"


def host_tensor(arr: np.ndarray, dtype: str) -> Any:
    """A torch CPU tensor over a NumPy array: floats in `dtype` (bfloat16 as the bits torch's
    rounding gives, in an int16 array viewed as bfloat16), integers int64.

    NumPy asks for huge pages on large arrays, torch's allocator does not: the same in-place
    bfloat16 rotary apply at 2 threads read 1.44-1.65x its roof on inputs in torch's 4 KiB
    pages and 0.88-0.89x on the same values in NumPy's (paired, load 3.5)."""
    import torch

    if arr.dtype.kind != "f":
        return torch.from_numpy(np.array(arr, dtype=np.int64))
    if dtype != "bfloat16":
        return torch.from_numpy(np.array(arr, dtype=dtype))
    held = torch.from_numpy(np.empty(arr.shape, np.int16)).view(torch.bfloat16)
    held.copy_(torch.from_numpy(np.array(arr)))   # torch's rounding, to nearest even
    return held


def host_input(arr: np.ndarray, dtype: str, device: str) -> np.ndarray:
    """A fresh NumPy copy: float inputs in `dtype` (float32 values for bfloat16, which NumPy
    lacks), integer ones as they are."""
    if arr.dtype.kind == "f":
        return np.array(arr, dtype=np.float32 if dtype == "bfloat16" else dtype)
    return np.array(arr)
