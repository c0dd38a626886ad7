"""First calls against an allocate-and-fill of the same bytes (issue 24), interleaved in one process.

A first call is a one-off build into fresh memory: the builder is made (untimed, as bench
builds it: JIT and tables in setup), then one call is timed. Each round rebuilds every candidate
and every fresh-memory roof of the cell (bench's own, from ROOF_REGISTRY) and times one call of
each, in a new order per round, so load hits all alike. glibc recycles freed blocks below its
dynamic mmap threshold (up to 32 MiB), so run it with a fixed threshold to make every output
fresh pages, as a process's first call gets them:

    MALLOC_MMAP_THRESHOLD_=1048576 NUMBA_NUM_THREADS=2 OMP_NUM_THREADS=2 \\
        python scripts/first_call_ratios.py [--rounds 7] [--threads 2] [--cpu] [--only WORKLOAD]
        [--impl NAME ...]

Prints, per workload x dtype at the default sweep's largest size, each candidate's and roof's
median and min first call and the candidate's ratio to the fastest roof (median over median,
min over min). A development tool, not part of bench: its figures go into docs/fast.md.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.bench.grid import default_grid, plan  # noqa: E402
from harness.bench.measure import Hands, _timed_call  # noqa: E402
from harness.bench.roofs import ROOF_REGISTRY, roofs_for  # noqa: E402
from harness.core.plugins import load_builtins  # noqa: E402
from harness.core.registry import REGISTRY  # noqa: E402
from harness.runs.results import roof_bound  # noqa: E402

#: The fastest designs of each memory-bound workload (docs/fast.md). A `-recycled` twin's first
#: call is the same kernel into the same fresh memory; an in-place apply allocates nothing.
CANDIDATES = {
    "table": ("numba-angleadd",),
    "forward": ("numba-fused-forward",),
    "cache": ("rotary-numba-cache",),
    "apply": ("rotary-numba-apply-fused",),
    "grid": ("grid-numba",),
}
#: Roofs slower than this multiple of the fastest in the untimed warm-up are not timed further.
SLOW_ROOF = 2.5
DTYPES = ("float32", "float64", "bfloat16", "float16")


def cells(threads: int, only: str, names: tuple[str, ...]):
    """(workload, dtype) -> (candidate cells, fresh-memory memory-roof cells) at the largest size."""
    wanted = set(names) or {n for w, ns in CANDIDATES.items() if not only or w == only for n in ns}
    impls = [i for i in map(REGISTRY.get, sorted(wanted)) if not only or i.workload == only]
    chosen = [c for c in plan(impls, default_grid(threads)).cells if c.threads == threads
              and c.device == "cpu" and c.dtype in DTYPES]
    out = {}
    for key in sorted({(c.workload, c.dtype) for c in chosen if not c.is_roof}):
        here = [c for c in chosen if (c.workload, c.dtype) == key]
        largest = max(c.bytes_out for c in here if not c.is_roof)
        impl_cells = [c for c in here if not c.is_roof and c.bytes_out == largest]
        roofs = [replace(impl_cells[0], impl=r.name, backend=r.backend, is_roof=True)
                 for r in roofs_for(key[0], "cpu") if "recycled" not in r.name
                 and roof_bound(r.name) == "memory" and r.supports(impl_cells[0].spec()) is None]
        out[key] = (impl_cells, roofs)
    return out


def first_call(cell, clock=time.perf_counter) -> float:
    """Build `cell`'s callable as bench does (untimed) and time its first call."""
    impl = (ROOF_REGISTRY if cell.is_roof else REGISTRY).get(cell.impl)
    spec = cell.spec()
    args = cell.work.arguments(spec, cell.batch, cell.heads)
    at_call = bool(args) and not cell.is_roof and impl.inputs_at_call
    built = impl.build(spec) if at_call else impl.build(spec, *args)
    fn, fresh, wrong = _timed_call(impl, built, Hands(impl, spec, args) if at_call else None)
    if wrong:
        raise RuntimeError(wrong)
    if fresh is not None:
        fresh()
    start = clock()
    result = fn()
    took = clock() - start
    del result, fn, built
    return took


def pin(threads: int) -> None:
    import numba
    import torch

    numba.set_num_threads(threads)
    torch.set_num_threads(threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="one workload")
    parser.add_argument("--cpu", action="store_true",
                        help="time by the process's CPU clock (a quiet proxy at one thread)")
    parser.add_argument("--impl", action="append", default=[], help="time these implementations instead (any registered name)")
    opts = parser.parse_args()
    load_builtins()
    pin(opts.threads)
    clock = time.process_time if opts.cpu else time.perf_counter
    print(f"load {os.getloadavg()}, threads {opts.threads}, clock {clock.__name__}, "
          f"MALLOC_MMAP_THRESHOLD_={os.environ.get('MALLOC_MMAP_THRESHOLD_', 'unset')}", flush=True)
    for (work, dtype), (impl_cells, roofs) in cells(opts.threads, opts.only, tuple(opts.impl)).items():
        every = impl_cells + roofs
        warm = {cell.impl: first_call(cell, clock) for cell in every}   # compiles, untimed
        fastest = min(warm[c.impl] for c in roofs)
        roofs = [c for c in roofs if warm[c.impl] <= SLOW_ROOF * fastest]
        every = impl_cells + roofs
        times = {c.impl: [] for c in every}
        for _ in range(opts.rounds):
            for cell in random.sample(every, len(every)):
                times[cell.impl].append(first_call(cell, clock))
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        roof_med = min(med[c.impl] for c in roofs)
        roof_min = min(low[c.impl] for c in roofs)
        size = f"{impl_cells[0].length} x {impl_cells[0].d_model}, batch {impl_cells[0].batch}, " \
               f"heads {impl_cells[0].heads}, {impl_cells[0].bytes_out / 2**20:.0f} MiB"
        print(f"\n{work} {dtype} ({size}); load {os.getloadavg()[0]:.2f}", flush=True)
        for cell in sorted(every, key=lambda c: (c.is_roof, med[c.impl])):
            ratio = "" if cell.is_roof else \
                f"  x fresh fill: {med[cell.impl] / roof_med:.2f} (med) {low[cell.impl] / roof_min:.2f} (min)"
            print(f"  {cell.impl:40s} med {med[cell.impl] * 1e3:8.2f} ms  min "
                  f"{low[cell.impl] * 1e3:8.2f} ms{ratio}", flush=True)


if __name__ == "__main__":
    main()
