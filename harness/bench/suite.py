"""The static test module each worker process runs under pytest-benchmark.

It is parametrized by `harness.bench.worker` from the worker's config file, so
the same file serves every group; pytest-benchmark's JSON of a run (one entry
per cell, `extra_info` holding the cell) is what `pytest-benchmark compare` reads.
"""

from __future__ import annotations

from typing import Any

from harness.bench.cells import Cell
from harness.bench.worker import Worker


def test_cell(cell: Cell, bench_worker: Worker, benchmark: Any) -> None:
    bench_worker.run(cell, benchmark)
