"""numba.cuda: kernels written in Python, device arrays copied to the host to be judged."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from harness.backends import cuda_driver
from harness.backends.base import Backend


def poison(x: Any) -> bool:
    x.copy_to_device(np.full(x.shape, np.nan, x.dtype))
    return True


def cuda() -> Optional[str]:
    """A device, and a CUDA target that loads: numba-cuda releases trail NumPy's (one that
    still registers np.row_stack fails to load under NumPy 2.5, which removed it)."""
    from numba import cuda as numba_cuda

    if not numba_cuda.is_available():
        return "numba.cuda sees no usable CUDA device"
    try:
        import numba.cuda.cudaimpl  # noqa: F401  (the target's lowering, loaded at first compile)
    except Exception as exc:
        return (f"numba.cuda cannot load its CUDA target under NumPy {np.__version__} "
                f"({type(exc).__name__}: {exc})")
    return None


BACKEND = Backend(
    name="numba-cuda", install="pip install numba-cuda", modules=("numba",),
    distributions={"numba-cuda": ("numba-cuda",)},
    array_modules=("numba.cuda", "numba_cuda"), to_numpy=lambda x: x.copy_to_host(),
    poison=poison, peak={"cuda": cuda_driver.free_memory_peak}, cuda=cuda,
    jit=True,
)
