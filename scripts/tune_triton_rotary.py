"""Time the project's Triton rotary apply over its tiles on a GPU, beside the device copy.

The apply kernel's tiles are chosen by a rule at setup (impls/rotary/triton.py `ApplyTiles`):
no autotune wrapper, whose Python launch cost more than these kernels take. This script times
each candidate (elements per program, heads per program, warps) at the shapes the library
kernels are tuned for (tritonbench's rope operator and Liger's Llama-3-8B: batch 1, 32 q heads
and 8 kv heads, sequence first, head_dim 128 at 1024 to 16384 positions; head_dim 16, 64 and
256 at 2048), in place and not, each from a CUDA graph (`triton.testing.do_bench_cudagraph`),
beside `q.clone(), k.clone()` timed the same way: the copy of the same bytes. Every candidate is
first checked against the float64 reference, so a fast wrong tile is never reported. Writes
one CSV row per (shape, dtype, in place, tiles) and prints the best tiles per shape.

    python3 scripts/tune_triton_rotary.py OUT.csv            (on a GPU; the campaign's `tune` step)
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (sequence, head_dim): tritonbench's sweep at head_dim 128, and its head_dim sweep at 2048.
SHAPES = tuple((seq, 128) for seq in (1024, 2048, 4096, 8192, 16384)) + tuple(
    (2048, d) for d in (16, 64, 256))
Q_HEADS, K_HEADS = 32, 8
TILES = (1024, 2048, 4096, 8192)
ROWS = (1, 2, 4, 8, 16)
WARPS = (4, 8)


def candidates(tiles: Iterable[int] = TILES, rows: Iterable[int] = ROWS,
               warps: Iterable[int] = WARPS) -> list:
    """Every ApplyTiles to time (min_programs 1: max_rows is then what a program takes)."""
    from harness.impls.rotary.triton import ApplyTiles

    return [ApplyTiles(tile=t, max_rows=r, min_programs=1, num_warps=w)
            for t, r, w in itertools.product(tiles, rows, warps)]


def inputs(seq: int, head_dim: int, dtype: str, device: str, heads: tuple = (Q_HEADS, K_HEADS)):
    """(spec, q, k, position ids, float64 q and k): sequence-first, GQA, shuffled ids."""
    import numpy as np
    import torch

    from harness.core.kinds.rotary import RotarySpec

    spec = RotarySpec(seq, head_dim, dtype=dtype, base=500000.0)
    rng = np.random.default_rng(3)
    q64 = rng.standard_normal((1, seq, heads[0], head_dim))
    k64 = rng.standard_normal((1, seq, heads[1], head_dim))
    ids = rng.permutation(seq).astype(np.int64)
    torch_dtype = getattr(torch, dtype)
    q, k = (torch.from_numpy(x).to(device, torch_dtype) for x in (q64, k64))
    q64, k64 = (x.to("cpu", torch.float64).numpy() for x in (q, k))   # what the kernel was given
    return spec, q, k, torch.from_numpy(ids).to(device), q64, k64, ids


def judge(spec, x64, ids, device: str) -> Callable:
    """`problem(out)`: None when `out` (sequence first, on `device`) is within the kind's
    tolerance of the float64 reference, else how far out. The reference is computed once."""
    import numpy as np
    import torch

    from harness.core.kinds.rotary import (apply_reference, apply_tolerance, cache_reference,
                                           cache_tolerance)

    heads_first = np.swapaxes(x64, 1, 2)
    cache, cache_tol = cache_reference(spec), cache_tolerance(spec)
    expected, allowed = (torch.from_numpy(np.ascontiguousarray(np.swapaxes(a[0], 1, 2))).to(device)
                         for a in (apply_reference(spec, heads_first, heads_first, ids, cache),
                                   apply_tolerance(spec, heads_first, heads_first, ids, cache,
                                                   cache_tol)))

    def problem(out) -> Optional[str]:
        ratio = float(((out.double() - expected).abs() / allowed).max())
        return None if ratio <= 1.0 else f"error {ratio:.3g} x the tolerance"

    return problem


def tune(shapes, dtypes, choices, device: str, timer: Callable[[Callable], float],
         heads: tuple = (Q_HEADS, K_HEADS)) -> list[dict]:
    """One row per (shape, dtype, in place, tiles): microseconds per call, the copy's, the
    ratio, or why the tiles were wrong."""
    import torch

    from harness.impls.rotary import triton as kernel

    rows = []
    for (seq, head_dim), dtype in itertools.product(shapes, dtypes):
        spec, q, k, ids, q64, k64, ids_np = inputs(seq, head_dim, dtype, device, heads)
        q_wrong, k_wrong = judge(spec, q64, ids_np, device), judge(spec, k64, ids_np, device)
        constants = kernel.constants(spec, device)
        copy_us = timer(lambda: (q.clone(), k.clone()))
        for tiles, in_place in itertools.product(choices, (False, True)):
            launch = kernel.apply_launcher(spec, q, k, ids, *constants, seq_first=True,
                                           in_place=in_place, tiles=tiles)
            qx, kx = q.clone(), k.clone()
            oq, ok = (qx, kx) if in_place else (torch.empty_like(q), torch.empty_like(k))
            launch(qx, kx, oq, ok)
            problem = q_wrong(oq) or k_wrong(ok)
            us = float("nan") if problem else timer(lambda: launch(qx, kx, oq, ok))
            rows.append(dict(seq=seq, head_dim=head_dim, dtype=dtype, in_place=in_place,
                             tile=tiles.tile, max_rows=tiles.max_rows, num_warps=tiles.num_warps,
                             us=us, copy_us=copy_us, x_copy=us / copy_us, problem=problem or ""))
    return rows


def best(rows: list[dict]) -> list[dict]:
    """The fastest correct tiles of each (shape, dtype, in place)."""
    chosen: dict[tuple, dict] = {}
    for row in rows:
        key = (row["seq"], row["head_dim"], row["dtype"], row["in_place"])
        if not row["problem"] and (key not in chosen or row["us"] < chosen[key]["us"]):
            chosen[key] = row
    return list(chosen.values())


def cuda_graph_timer(fn: Callable) -> float:
    """Microseconds per call, replayed from a CUDA graph (Triton's own bench)."""
    from triton.testing import do_bench_cudagraph

    return 1e3 * do_bench_cudagraph(fn, rep=20)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the CSV to write")
    parser.add_argument("--dtypes", default="bfloat16", help="comma-separated (default bfloat16)")
    args = parser.parse_args(argv)
    rows = tune(SHAPES, args.dtypes.split(","), candidates(), "cuda", cuda_graph_timer)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in best(rows):
        print(f"{row['seq']:>6} x {row['head_dim']:>3} {row['dtype']} in_place={row['in_place']!s:5} "
              f"tile {row['tile']:>5} rows {row['max_rows']:>2} warps {row['num_warps']}: "
              f"{row['us']:.1f} us, {row['x_copy']:.2f}x the copy ({row['copy_us']:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
