"""A backend that compiles on first use, as Numba, XLA or Triton do: the first call of each
dtype in a process pays COMPILE_S into a cache that every implementation of the backend shares
(a JIT's runtime and its caches live as long as the process); later calls pay CALL_S."""

from __future__ import annotations

import time

import numpy as np

from harness import Spec, backends, register
from harness.backends.base import Backend
from harness.backends.host import resident_peak
from tests.bench_plugins.right import paper_table

COMPILE_S, CALL_S = 0.25, 0.001
backends.add(Backend(name="fakejit", jit=True, peak={"cpu": resident_peak}))
compiled: set[str] = set()        # dtypes compiled in this process, by any implementation


def busy(seconds: float) -> None:
    """Spend `seconds` on the CPU (a compiler works; it does not sleep)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def jitted(spec: Spec):
    def table():
        if spec.dtype not in compiled:
            busy(COMPILE_S)
            compiled.add(spec.dtype)
        start = time.perf_counter()         # a right table (bench judges values), within CALL_S
        out = paper_table(spec)
        busy(CALL_S - (time.perf_counter() - start))
        return out

    return table


register(name="bt-jit-a", backend="fakejit")(jitted)
register(name="bt-jit-b", backend="fakejit")(jitted)
