"""JAX: immutable arrays on the CPU or a GPU, dispatched asynchronously, with XLA's own pools.

XLA takes 75% of GPU memory at its first use unless told otherwise; in one
process with torch or CuPy (verify runs everything in one) that starves them,
so this adapter asks XLA to allocate on demand before anything imports jax.

A call returns before its result is computed (on the CPU too), so bench waits for it
(`wait`) inside the timed region. XLA sizes its CPU pool from the CPUs the process may
run on and has no setting for a count: at one thread its kernels are made single-threaded
(`--xla_cpu_multi_thread_eigen=false`, in XLA_FLAGS before jax is imported); at all usable
CPUs it is left as it is; any other count cannot be pinned, and `pin_threads` says so in
every row.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import numpy as np

from harness.backends import cuda_driver
from harness.backends.base import Backend
from harness.backends.host import resident_peak

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

ONE_THREAD_FLAG = "--xla_cpu_multi_thread_eigen=false"


def cuda() -> Optional[str]:
    import jax

    try:
        jax.devices("gpu")
    except RuntimeError:
        return "JAX sees no GPU (CPU-only jaxlib, or no device)"
    return None


def pin_threads(threads: int) -> str:
    """Set XLA's threading before jax is imported; describe what holds."""
    if "jax" in sys.modules:
        return "xla unpinned (jax was imported before the threads could be set)"
    if threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        if ONE_THREAD_FLAG not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} {ONE_THREAD_FLAG}".strip()
        return "xla cpu kernels single-threaded (multi_thread_eigen=false)"
    sized = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if threads == sized:
        return f"xla pool sized by affinity={sized}"
    return (f"xla unpinnable at {threads} threads (its pool is sized by the affinity, "
            f"{sized} CPUs)")


def wait(out: Any) -> Any:
    import jax

    return jax.block_until_ready(out)


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """A NumPy input as a new array on JAX's default device: floats in the spec's dtype."""
    import jax.numpy as jnp

    return jnp.array(arr, dtype=getattr(jnp, dtype) if arr.dtype.kind == "f" else arr.dtype)


BACKEND = Backend(
    name="jax", install="pip install 'pe-harness[jax]'", modules=("jax",),
    distributions={"jax": ("jax",), "jaxlib": ("jaxlib",)},
    array_modules=("jax", "jaxlib"), to_numpy=np.asarray, pin_threads=pin_threads, wait=wait,
    peak={"cpu": resident_peak, "cuda": cuda_driver.free_memory_peak}, cuda=cuda,
    jit=True, inputs=inputs,
)
