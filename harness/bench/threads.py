"""Thread pinning for each backend, so 1-thread and all-core cells mean what they say.

Two steps, because thread pools read their size when they start: the parent
puts the OpenMP/BLAS/Numba/TF variables into the worker's environment
(`thread_env`), then the worker calls the backend's own setters (its adapter's
`pin_threads`) before any cell runs (`pin`). What actually holds afterwards is recorded in every row.
"""

from __future__ import annotations

import os

from harness import backends

ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
            "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """Environment for a worker process with `threads` threads everywhere."""
    return {name: str(threads) for name in ENV_VARS}


def pin(backend: str, threads: int, again: bool = False) -> str:
    """Pin `backend`'s own pools (the environment is already set, sized for the most threads
    this worker uses); describe what holds. `again`: resize them between cells, for a backend
    whose pools resize while it runs (`Backend.runtime_threads`)."""
    values = {os.environ.get(name, "unset") for name in ENV_VARS}
    env = values.pop() if len(values) == 1 else "mixed"
    settings = [f"env OMP/MKL/OPENBLAS/NUMBA/TF={env}"]
    adapter = backends.get(backend)
    if again and not adapter.runtime_threads:
        raise ValueError(f"backend {backend!r} cannot resize its thread pools while it runs")
    if adapter.prepare is not None and not again:   # before its pools start: TF's quiet import
        adapter.prepare()
    if adapter.pin_threads is not None:
        settings.append(adapter.pin_threads(threads))
    return "; ".join(settings)
