"""Thread pinning for each backend, so 1-thread and all-core cells mean what they say.

Two steps, because thread pools read their size when they start: the parent
puts the OpenMP/BLAS/Numba/TF variables into the worker's environment
(`thread_env`), then the worker calls the backend's own setters before any
cell runs (`pin`). What actually holds afterwards is recorded in every row.
"""

from __future__ import annotations

import os
from typing import Callable

ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
            "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """Environment for a worker process with `threads` threads everywhere."""
    return {name: str(threads) for name in ENV_VARS}


def _pin_torch(threads: int) -> str:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already started in this process: report what holds
        pass
    return f"torch intra={torch.get_num_threads()} interop={torch.get_num_interop_threads()}"


def _pin_tensorflow(threads: int) -> str:
    import tensorflow as tf

    threading = tf.config.threading
    try:
        threading.set_intra_op_parallelism_threads(threads)
        threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime is already initialised
        pass
    return (f"tf intra={threading.get_intra_op_parallelism_threads()} "
            f"inter={threading.get_inter_op_parallelism_threads()}")


def _pin_numba(threads: int) -> str:
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return f"numba threads={numba.get_num_threads()}"


PINNERS: dict[str, Callable[[int], str]] = {
    "torch": _pin_torch, "tensorflow": _pin_tensorflow, "numba": _pin_numba,
}


def pin(backend: str, threads: int) -> str:
    """Pin `backend`'s own pools (the environment is already set); describe what holds."""
    values = {os.environ.get(name, "unset") for name in ENV_VARS}
    env = values.pop() if len(values) == 1 else "mixed"
    settings = [f"env OMP/MKL/OPENBLAS/NUMBA/TF={env}"]
    pinner = PINNERS.get(backend)
    if pinner is not None:
        settings.append(pinner(threads))
    return "; ".join(settings)
