"""Implementations of known cost for bench's tests: they busy-wait on perf_counter (not sleep),
so the time is spent on a CPU like real work, and pytest-benchmark must report it."""

from __future__ import annotations

import os
import time

import numpy as np

from harness import Spec, register
from tests.bench_plugins.right import paper_table


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def costing(seconds: float, first_extra: float = 0.0):
    """A factory whose table costs `seconds` per call, plus `first_extra` on the first call."""

    def build(spec: Spec):
        calls = []

        def table():
            start = time.perf_counter()     # a right table (bench judges values), within the cost
            out = paper_table(spec)
            busy(seconds + (0.0 if calls else first_extra) - (time.perf_counter() - start))
            calls.append(None)
            return out

        return table

    return build


register(name="bt-2ms", backend="numpy")(costing(0.002))
register(name="bt-20ms", backend="numpy")(costing(0.020))
register(name="bt-first-300ms", backend="numpy")(costing(0.002, first_extra=0.300))


@register(name="bt-scaled", backend="numpy")
def build_scaled(spec: Spec):
    """1 us per element; logs "LENGTHxD_MODEL" to $BT_BUILD_LOG on every build (which cells ran)."""
    log = os.environ.get("BT_BUILD_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{spec.length}x{spec.d_model}\n")
    return costing(1e-6 * spec.length * spec.d_model)(spec)


@register(name="bt-gate", backend="numpy")
def build_gate(spec: Spec):
    """A right table in at least 0.4 ms a call, the whole call times $BT_SLOWDOWN (default 1):
    the compare gate's planted slowdown, at every size (a table slower to build than 0.4 ms
    is slowed too)."""
    factor = float(os.environ.get("BT_SLOWDOWN", "1"))

    def table():
        start = time.perf_counter()
        out = paper_table(spec)
        busy(factor * max(4e-4, time.perf_counter() - start) - (time.perf_counter() - start))
        return out

    return table


@register(name="bt-pool", backend="numpy")
def build_pool(spec: Spec):
    """A right table, then 0.4 ms of busy-waiting on each thread of a pool as large as the
    worker's thread count ($OMP_NUM_THREADS): a parallel kernel, whose threads all run (so
    beside a busy core the load rule flags it, as it does not a single-threaded one)."""
    from concurrent.futures import ThreadPoolExecutor

    threads = max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    pool = ThreadPoolExecutor(threads)

    def table():
        out = paper_table(spec)
        list(pool.map(busy, [4e-4] * threads))
        return out

    return table
