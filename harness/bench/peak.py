"""Peak memory of one call, by the best counter each backend offers.

- `tracemalloc` for NumPy, Numba and pure Python: NumPy reports its buffers to
  it, so the peak includes every temporary of the call.
- `cuda-max-allocated` for CUDA devices: torch's own allocator high-water mark.
- `rss-peak` for the rest on Linux (torch and TF on CPU allocate outside
  tracemalloc's sight): the kernel's high-water mark of resident memory (VmHWM),
  reset just before the call through /proc/self/clear_refs, minus the resident
  memory before it. Temporaries freed within the call count; memory a library
  reuses from its own pool does not, so it is a lower bound on what the call used.
- `rss-delta` where that reset is not possible: resident memory after the call,
  result still alive, minus before; it misses temporaries freed within the call.
"""

from __future__ import annotations

import functools
import tracemalloc
from pathlib import Path
from typing import Any, Callable

TRACEMALLOC_BACKENDS = ("numpy", "numba", "python")
CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


def method_for(backend: str, device: str) -> str:
    if device == "cuda":
        return "cuda-max-allocated"
    if backend in TRACEMALLOC_BACKENDS:
        return "tracemalloc"
    return "rss-peak" if _can_reset_peak() else "rss-delta"


def measure(fn: Callable[[], Any], backend: str, device: str) -> tuple[int, str]:
    """(peak bytes of one call of `fn`, the method used)."""
    method = method_for(backend, device)
    return _MEASURES[method](fn), method


def _tracemalloc(fn: Callable[[], Any]) -> int:
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


def _cuda(fn: Callable[[], Any]) -> int:
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del result
    return max(0, peak - before)


def _rss(fn: Callable[[], Any]) -> int:
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
def _can_reset_peak() -> bool:
    try:
        _reset_peak()
        return _status_bytes("VmHWM") > 0
    except OSError:
        return False


def _rss_peak(fn: Callable[[], Any]) -> int:
    _reset_peak()
    before = _status_bytes("VmRSS")
    result = fn()
    peak = _status_bytes("VmHWM")
    del result
    return max(0, peak - before)


_MEASURES: dict[str, Callable[[Callable[[], Any]], int]] = {
    "tracemalloc": _tracemalloc, "cuda-max-allocated": _cuda, "rss-peak": _rss_peak,
    "rss-delta": _rss,
}
