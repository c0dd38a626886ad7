"""Numba on the CPU: returns NumPy arrays (NumPy converts and poisons them); its own pool."""

from typing import Any

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import host_input, host_tensor, tracemalloc_peak


def pin_threads(threads: int) -> str:
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return f"numba threads={numba.get_num_threads()}"


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """NumPy copies, as a host backend's; bfloat16 floats, which NumPy cannot hold, as a torch
    bfloat16 tensor over NumPy's memory (what its bfloat16 kernels return too;
    harness.backends.host.host_tensor), float32 values without torch."""
    if dtype == "bfloat16" and arr.dtype.kind == "f":
        try:
            import torch  # noqa: F401
        except ImportError:
            return host_input(arr, dtype, device)
        return host_tensor(arr, dtype)
    return host_input(arr, dtype, device)


BACKEND = Backend(name="numba", install="pip install 'pe-harness[numba]'", modules=("numba",),
                  distributions={"numba": ("numba",)}, pin_threads=pin_threads,
                  peak={"cpu": tracemalloc_peak}, jit=True, runtime_threads=True, inputs=inputs)
