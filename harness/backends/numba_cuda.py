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
    from numba import cuda as numba_cuda

    return None if numba_cuda.is_available() else "numba.cuda sees no usable CUDA device"


BACKEND = Backend(
    name="numba-cuda", install="pip install numba-cuda", modules=("numba",),
    distributions={"numba-cuda": ("numba-cuda",)},
    array_modules=("numba.cuda", "numba_cuda"), to_numpy=lambda x: x.copy_to_host(),
    poison=poison, peak={"cuda": cuda_driver.free_memory_peak}, cuda=cuda,
)
