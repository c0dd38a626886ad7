"""CuPy: NumPy-like arrays on the GPU, with a memory pool of its own."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from harness.backends.base import Backend, Call
from harness.backends.host import host_input


def poison(x: Any) -> bool:
    x.fill(np.nan)
    return True


def negate(x: Any) -> bool:
    import cupy

    if x.dtype.kind != "f":
        return False
    cupy.negative(x, out=x)
    return True


def cuda() -> Optional[str]:
    import cupy

    try:
        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "CuPy sees no CUDA device"
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        return f"CuPy sees no usable CUDA device ({exc})"


def pool_peak(fn: Call) -> tuple[int, str]:
    """Bytes CuPy's pool hands out for one call, result alive (freed temporaries do not count)."""
    import cupy

    pool = cupy.get_default_memory_pool()
    cupy.cuda.Device().synchronize()
    before = pool.used_bytes()
    result = fn()
    cupy.cuda.Device().synchronize()
    used = pool.used_bytes() - before
    del result
    return max(0, used), "cupy-pool-delta"


def capture(fn: Call, calls: int = 1) -> Call:
    """`calls` back-to-back calls recorded as one CUDA graph on a stream of its own (CuPy's
    stream capture); the
    warm-up calls first leave the pool holding blocks of the right sizes, so the captured call
    allocates without cudaMalloc (which a capture forbids)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(3):
            fn()
        stream.synchronize()
        stream.begin_capture()
        try:
            for _ in range(calls):
                out = fn()
        finally:
            graph = stream.end_capture()

    def replay() -> Any:
        graph.launch(stream)
        return out

    return replay


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """A NumPy input as a new device array: floats in the spec's dtype (float32 values for
    bfloat16, which CuPy lacks)."""
    import cupy

    return cupy.asarray(host_input(arr, dtype, device))


BACKEND = Backend(
    name="cupy", install="pip install cupy-cuda12x (or the wheel for your CUDA)",
    modules=("cupy",),
    distributions={"cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy")},
    array_modules=("cupy", "cupy_backends"), to_numpy=lambda x: x.get(), poison=poison,
    peak={"cuda": pool_peak}, cuda=cuda, capture=capture,
    jit=True, inputs=inputs, negate=negate,
)
