"""Numba on the CPU: returns NumPy arrays (NumPy converts and poisons them); its own pool."""

from typing import Any

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import host_input, tracemalloc_peak


def pin_threads(threads: int) -> str:
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return f"numba threads={numba.get_num_threads()}"


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """NumPy copies, as a host backend's; bfloat16 floats, which NumPy cannot hold, as a torch
    bfloat16 tensor (what its bfloat16 kernels return too) over NumPy's memory, float32 values
    without torch.

    NumPy asks for huge pages on large arrays, torch's allocator does not: the same in-place
    bfloat16 rotary apply at 2 threads read 1.44-1.65x its roof on inputs in torch's 4 KiB
    pages and 0.88-0.89x on the same values in NumPy's (paired, load 3.5); float16 inputs,
    NumPy arrays, had always been at the roof."""
    if dtype == "bfloat16" and arr.dtype.kind == "f":
        try:
            import torch
        except ImportError:
            return host_input(arr, dtype, device)
        bits = np.empty(arr.shape, np.int16)
        held = torch.from_numpy(bits).view(torch.bfloat16)
        held.copy_(torch.from_numpy(np.array(arr, dtype=np.float32)))   # rounded to nearest even
        return held
    return host_input(arr, dtype, device)


BACKEND = Backend(name="numba", install="pip install 'pe-harness[numba]'", modules=("numba",),
                  distributions={"numba": ("numba",)}, pin_threads=pin_threads,
                  peak={"cpu": tracemalloc_peak}, jit=True, runtime_threads=True, inputs=inputs)
