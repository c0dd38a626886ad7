"""JAX: immutable arrays on the CPU or a GPU.

XLA takes 75% of GPU memory at its first use unless told otherwise; in one
process with torch or CuPy (verify runs everything in one) that starves them,
so this adapter asks XLA to allocate on demand before anything imports jax.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

from harness.backends import cuda_driver
from harness.backends.base import Backend
from harness.backends.host import resident_peak

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def cuda() -> Optional[str]:
    import jax

    try:
        jax.devices("gpu")
    except RuntimeError:
        return "JAX sees no GPU (CPU-only jaxlib, or no device)"
    return None


BACKEND = Backend(
    name="jax", install="pip install 'pe-harness[jax]'", modules=("jax",),
    distributions={"jax": ("jax",), "jaxlib": ("jaxlib",)},
    array_modules=("jax", "jaxlib"), to_numpy=np.asarray,
    peak={"cpu": resident_peak, "cuda": cuda_driver.free_memory_peak}, cuda=cuda,
)
