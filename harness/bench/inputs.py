"""A cell's inputs (rotary apply's q and k, forward's x), made once per shape in a worker.

The inputs of a workload are a deterministic function of the spec, the batch and the heads
(a fixed seed), and a worker times every implementation of a size, in each dtype, one after
another. Drawing them afresh for each cell cost a large apply cell seconds on the 2-core VM
(float64 normals, rounding to the dtype, fresh pages); a copy of the same arrays costs a
fraction. Every cell still gets its own arrays: bench negates them in place after the timed
rounds, and an in-place kernel rotates them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from harness.bench.cells import Cell

#: Bytes of pristine inputs kept at most (the last few specs: a size's dtypes).
MAX_BYTES = 1 << 30


class Inputs:
    """Pristine inputs by (workload, spec, batch, heads), least recently used dropped first."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.kept: OrderedDict[tuple, tuple] = OrderedDict()
        self.made = 0        # how many times the workload drew them

    def arguments(self, cell: Cell, spec: Any) -> tuple:
        """The cell's inputs, its own copies of them (() for a workload without inputs)."""
        if cell.work.inputs is None:
            return ()
        key = (cell.kind, cell.workload, repr(spec), cell.batch, cell.heads)
        pristine = self.kept.pop(key, None)
        if pristine is None:
            pristine = cell.work.arguments(spec, cell.batch, cell.heads)
            self.made += 1
        self.kept[key] = pristine
        while len(self.kept) > 1 and _nbytes(self.kept) > self.max_bytes:
            self.kept.popitem(last=False)
        return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in pristine)


def _nbytes(kept: OrderedDict) -> int:
    return sum(a.nbytes for args in kept.values() for a in args if isinstance(a, np.ndarray))


#: This worker's inputs.
WORKER_INPUTS = Inputs()
