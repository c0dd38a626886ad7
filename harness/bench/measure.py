"""Measure one cell in a worker: untimed build, the first call apart, peak memory, pytest-benchmark.

Order matters. The factory's setup (imports, JIT, tracing, device transfer) is
never timed. The first call (compilation on first use, caches) is timed once
on its own as `first_call_s` - perf_counter around a single call, not a
benchmark timer. Peak memory needs a counter that slows the call, so it gets
its own call too, and one warm call sizes the rounds of a cold-cache cell.
Only then does pytest-benchmark calibrate and time rounds of the warm
callable, in the cell's mode (harness.bench.modes: on a device, every call is
followed by a sync, or replayed from a CUDA graph).
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from harness.bench import modes, peak
from harness.bench.cells import Cell, Outcome
from harness.bench.settings import Timing
from harness.checks import forward_input
from harness.registry import Implementation

MAX_REASON = 300


def error_reason(stage: str, exc: BaseException) -> str:
    """One line for the CSV: where it failed and the exception's message."""
    text = f"{stage}: {type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def measure(impl: Implementation, cell: Cell, benchmark: Any, thread_settings: str,
            timing: Timing = Timing()) -> Outcome:
    """Time `impl` on `cell` with the pytest-benchmark fixture; an exception becomes an error."""
    stage = "build"
    try:
        spec = cell.spec()
        args = (forward_input(spec, cell.batch),) if cell.workload == "forward" else ()
        start = time.perf_counter()
        fn = impl.build(spec, *args)
        build_s = time.perf_counter() - start
        call = modes.synced(fn, cell.device)
        stage = "first call"
        start = time.perf_counter()
        call()
        first_call_s = time.perf_counter() - start
        stage = "peak-memory call"
        peak_bytes, method = peak.measure(call, cell.backend, cell.device)
        stage = "warm call"
        start = time.perf_counter()
        call()
        warm_s = time.perf_counter() - start
        stage = f"{cell.mode} set-up" if cell.mode else "set-up"
        rounds = modes.rounds_for(cell.mode, fn, cell.backend, cell.device, warm_s,
                                  timing.max_time, timing.min_rounds)
        stage = "timed calls"
        benchmark.extra_info.update(cell.as_dict(), key=cell.key, build_s=build_s,
                                    first_call_s=first_call_s, peak_bytes=peak_bytes,
                                    peak_method=method, thread_settings=thread_settings)
        rounds.run(benchmark)
    except modes.NotCapturable as exc:
        return Outcome("skip", error_reason("not capturable as a CUDA graph", exc),
                       thread_settings=thread_settings)
    except Exception as exc:
        traceback.print_exc()   # into the worker's log; the row gets one line
        return Outcome("error", error_reason(stage, exc), thread_settings=thread_settings)
    stats = benchmark.stats.stats
    return Outcome("ok", median_s=stats.median, iqr_s=stats.iqr, min_s=stats.min,
                   mean_s=stats.mean, stddev_s=stats.stddev, rounds=stats.rounds,
                   build_s=build_s, first_call_s=first_call_s, peak_bytes=peak_bytes,
                   peak_method=method, thread_settings=thread_settings)
