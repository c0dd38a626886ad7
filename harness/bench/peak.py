"""Peak memory of one call, by the best counter each backend offers.

- `tracemalloc` for NumPy, Numba and pure Python: NumPy reports its buffers to
  it, so the peak includes every temporary of the call.
- `cuda-max-allocated` for CUDA devices: torch's own allocator high-water mark.
- `rss-delta` for the rest (torch and TF on CPU allocate outside tracemalloc's
  sight): resident memory after the call, result still alive, minus before. It
  misses temporaries freed within the call, so it is a lower bound.
"""

from __future__ import annotations

import tracemalloc
from typing import Any, Callable

TRACEMALLOC_BACKENDS = ("numpy", "numba", "python")


def method_for(backend: str, device: str) -> str:
    if device == "cuda":
        return "cuda-max-allocated"
    if backend in TRACEMALLOC_BACKENDS:
        return "tracemalloc"
    return "rss-delta"


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


_MEASURES: dict[str, Callable[[Callable[[], Any]], int]] = {
    "tracemalloc": _tracemalloc, "cuda-max-allocated": _cuda, "rss-delta": _rss,
}
