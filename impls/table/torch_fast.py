"""torch: the angle-addition identity in torch ops, eager and torch.compile'd, CPU and CUDA.

Why it is fast: base tables come from ~2 sqrt(rows) float64 sin/cos rows
(`sincos_rows`; torch's float64 sin is SIMD), then out = P X + Q Y. Eager does
it as `mul(out=)` + `addcmul_` over 1 MiB slabs, so the second pass reads L2;
`torch.compile` (inductor) fuses it into one vectorised OpenMP loop that writes
each element once. On the CPU the output is a NumPy-allocated buffer shared
with torch: NumPy asks for transparent huge pages, torch's allocator does not
(unless THP_MEM_ALLOC_ENABLE=1), and 8192 4 KiB page faults cost about as much
as the whole computation.

Where the error comes from: float64 base tables (~2 ulp) rounded to the output
dtype, then two products and a sum in that dtype: max ~1.5e-7 in float32 at
any position (compared with ~1e-2 for the seeds' float32 angles at 262 144).
"""

from __future__ import annotations

import functools

import numpy as np

from harness import Spec, register
from harness.util.memory import first_touch
from ._assemble import EVERY_CONVENTION
from ._angle_addition import column_steps, sincos_rows, to_columns

BLOCK = 64
SLAB_BLOCKS = 4   # eager CPU: 4 x 64 rows x 1024 float32 = 1 MiB per slab


def _combine_into(out3, P, Q, X, Y):
    """out3[b, j, :] = P[b] X[j] + Q[b] Y[j]: the per-element pass, one store per element."""
    out3.copy_(P[:, None, :] * X + Q[:, None, :] * Y)
    return out3


@functools.cache
def _compiled():
    """One dynamic-shape graph per process: no recompiles (and no recompile limit) per Spec."""
    import torch

    return torch.compile(_combine_into, dynamic=True)


class AngleAdd:
    """The factory-side state for one Spec on one device; `tables()` and `empty()` are per call."""

    def __init__(self, spec: Spec, device: str):
        import torch

        self.torch, self.spec, self.device = torch, spec, device
        self.dtype = getattr(torch, spec.dtype)
        self.block = min(BLOCK, spec.length)
        self.n_blocks = -(-spec.length // self.block)
        self.steps = column_steps(spec)
        self.w, self.freq, *select = (
            torch.from_numpy(v).to(device) for v in (self.steps.w, self.steps.freq, *self.steps.select))
        self.select = tuple(select)

    def _take(self, x, index):
        return self.torch.index_select(x, 1, index)

    def _arange(self, n: int):
        return self.torch.arange(n, dtype=self.torch.float64, device=self.device)

    def tables(self):
        """P, Q [n_blocks, d] and X, Y [block, d]: float64 per frequency, rounded, spread."""
        spec, block, torch = self.spec, self.block, self.torch
        sin_p, cos_p, sin_j, cos_j = (t.to(self.dtype) for t in (
            *sincos_rows(torch, self._arange, spec.offset, block, self.n_blocks, self.w),
            *sincos_rows(torch, self._arange, 0, 1, block, self.w)))
        P, Q = to_columns(torch, sin_p, cos_p, self.select, take=self._take)
        return P, Q, self._take(cos_j, self.freq), self._take(sin_j, self.freq)

    def empty(self):
        """[n_blocks, block, d] output; on the CPU NumPy-allocated (huge pages), shared with torch,
        and faulted in by one thread before torch's threads write it."""
        shape = (self.n_blocks, self.block, self.spec.d_model)
        if self.device == "cpu":
            return self.torch.from_numpy(first_touch(np.empty(shape, self.spec.dtype)))
        return self.torch.empty(shape, dtype=self.dtype, device=self.device)

    def result(self, out3):
        return out3.view(-1, self.spec.d_model)[: self.spec.length]

    def eager(self):
        """mul + addcmul_ slab by slab (whole table at once on a GPU, where slabs buy nothing)."""
        P, Q, X, Y = self.tables()
        out3 = self.empty()
        step = SLAB_BLOCKS if self.device == "cpu" else self.n_blocks
        with self.torch.no_grad():
            for b0 in range(0, self.n_blocks, step):
                slab = out3[b0:b0 + step]
                self.torch.mul(P[b0:b0 + step, None], X, out=slab)
                slab.addcmul_(Q[b0:b0 + step, None], Y)
        return self.result(out3)

    def fused(self):
        """The per-element pass compiled: eager base tables (inductor would inline their sin/cos
        into the per-element loop, 20x slower), then one fused store per element."""
        with self.torch.no_grad():
            return self.result(_compiled()(self.empty(), *self.tables()))


@register(name="torch-angleadd", backend="torch", supports=EVERY_CONVENTION, cuda="torch-cuda-angleadd")
def build_torch_angleadd(spec: Spec, device: str = "cpu"):
    """Angle addition in eager torch ops: mul + addcmul_ over cache-sized slabs."""
    return AngleAdd(spec, device).eager


@register(name="torch-compile", backend="torch", supports=EVERY_CONVENTION, cuda="torch-cuda-compile")
def build_torch_compile(spec: Spec, device: str = "cpu"):
    """Angle addition, per-element pass fused by torch.compile (one Triton kernel on the GPU);
    compiles at the first call."""
    return AngleAdd(spec, device).fused
