"""torch: CPU and CUDA tensors, its two thread pools, its allocator's peak, CUDA graphs."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from harness.backends.base import Backend, Call
from harness.backends.host import host_tensor, resident_peak


def to_numpy(x: Any) -> np.ndarray:
    t = x.detach()
    if str(t.dtype) == "torch.bfloat16":
        t = t.float()   # NumPy has no bfloat16; widening is exact
    return t.cpu().numpy()


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """A NumPy input as a new tensor on `device`: floats in the spec's dtype, integers int64. On
    the CPU over NumPy's memory, as every host backend's inputs are (harness.backends.host:
    huge pages for large arrays, where torch's allocator gives 4 KiB ones), so that a torch
    roof and the kernel it measures read inputs alike."""
    import torch

    if device == "cpu":
        return host_tensor(arr, dtype)
    tensor = torch.from_numpy(np.array(arr))
    want = getattr(torch, dtype) if arr.dtype.kind == "f" else torch.int64
    return tensor.to(device=device, dtype=want)


def negate(x: Any) -> bool:
    """-x in place, for a float tensor."""
    import torch

    if not x.is_floating_point():
        return False
    with torch.no_grad():
        x.neg_()
    return True


def poison(x: Any) -> bool:
    import torch

    with torch.no_grad():
        x.fill_(float("nan"))
    return True


def pin_threads(threads: int) -> str:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already started in this process: report what holds
        pass
    return f"torch intra={torch.get_num_threads()} interop={torch.get_num_interop_threads()}"


def cuda() -> Optional[str]:
    import torch

    return None if torch.cuda.is_available() else "no CUDA device visible to torch"


def cuda_peak(fn: Call) -> tuple[int, str]:
    """torch's caching allocator high-water mark over one call (temporaries included)."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del result
    return max(0, peak - before), "cuda-max-allocated"


def capture(fn: Call, calls: int = 1) -> Call:
    """`calls` back-to-back calls recorded as one CUDA graph; a replay launches their kernels
    with no Python and one launch, so graph time over `calls` is kernel time and eager minus
    graph is launch overhead. Warm-up runs on a side stream first (allocator pools,
    torch.compile, autotuning); a result let go inside the graph leaves its memory to the next."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            out = fn()

    def replay() -> Any:
        graph.replay()
        return out

    return replay


BACKEND = Backend(
    name="torch", install="pip install 'pe-harness[torch]'", modules=("torch",),
    distributions={"torch": ("torch",)},
    array_modules=("torch",), to_numpy=to_numpy, poison=poison, pin_threads=pin_threads,
    peak={"cpu": resident_peak, "cuda": cuda_peak}, cuda=cuda, capture=capture, inputs=inputs,
    negate=negate,
)
