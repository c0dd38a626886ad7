"""Numba timestep embedding: one parallel pass, sin and cos from one shared float64 reduction.

Why it is fast: a timestep's angles `scale * t * freq_k` share no additive structure (the
frequencies are geometric and the timesteps arbitrary), so angle addition does not apply and
the cost is one sin and one cos per pair: the limit is vector sin/cos throughput (bench's
sincos roof), not a fill. Below float64, both come from one float64 reduction and two short
float32 polynomials (impls/_numba_sincos.py), with no libm call and no branch, so LLVM
vectorises the loop over frequencies; each row's sin and cos blocks are slices, which keeps
the stores unit-stride (indexing `out[i, sin_at + k]` instead did not vectorise: 5x slower).
Rows go to threads (`prange`), each element written once; half dtypes are stored as uint16
bits rounded once from float32 (impls/_numba_half.py). `-recycled` writes into the memory of
an embedding the caller has let go (harness.util.recycle): no page faults on rebuilds.

Where the error comes from: see _numba_sincos (a few float32 ulps at any timestep, where
diffusers' float32 angle is off by |x| ~6e-8), then one rounding to a half dtype. float64
output calls libm's sin and cos on the float64 angle instead.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from harness import TimestepSupports, register
from harness.core.kinds.timestep import TimestepSpec
from harness.util.recycle import RecycledBuffers

from .._numba_half import Storage, codecs
from .._numba_sincos import sincos
from ._common import blocks, frequencies, scaled_timesteps
from .._numba_cache import njit as cached_njit

FASTMATH = {"contract"}   # fuse a*b + c into an FMA; no reassociation, no unsafe math


@functools.cache
def _jit(dtype: str) -> SimpleNamespace:
    """Compile the kernels once per process and output dtype's codec (numba imported here)."""
    import numba

    njit = cached_njit(fastmath=FASTMATH)
    sincos32, store = sincos(), codecs()[dtype].store

    @njit(parallel=True)
    def reduced(out, scaled, freqs, sin_at, cos_at):
        half, dim = freqs.size, out.shape[1]
        for i in numba.prange(scaled.size):
            a = scaled[i]
            sin_row, cos_row = out[i, sin_at:sin_at + half], out[i, cos_at:cos_at + half]
            for k in range(half):
                s, c = sincos32(a * freqs[k])
                sin_row[k] = store(s)
                cos_row[k] = store(c)
            if dim % 2:
                out[i, dim - 1] = store(np.float32(0))

    @njit(parallel=True)
    def libm(out, scaled, freqs, sin_at, cos_at):
        half, dim = freqs.size, out.shape[1]
        for i in numba.prange(scaled.size):
            a = scaled[i]
            for k in range(half):
                x = a * freqs[k]
                out[i, sin_at + k] = math.sin(x)
                out[i, cos_at + k] = math.cos(x)
            if dim % 2:
                out[i, dim - 1] = 0

    return SimpleNamespace(kernel=libm if dtype == "float64" else reduced)


def _build(spec: TimestepSpec, recycle: bool):
    kernel = _jit(spec.dtype).kernel
    freqs, scaled = frequencies(spec), scaled_timesteps(spec)
    sin_at, cos_at = (block.start for block in blocks(spec))
    storage = Storage(spec.dtype)
    shape, dtype, result = (spec.count, spec.dim), storage.kernel, storage.result()
    kernel(np.empty((1, spec.dim), dtype), scaled[:1], freqs, sin_at, cos_at)   # compile now
    empty = RecycledBuffers(shape, dtype).take if recycle else lambda: np.empty(shape, dtype)

    def embed():
        out = empty()
        kernel(out, scaled, freqs, sin_at, cos_at)
        return result(out)

    return embed


@register(name="timestep-numba", backend="numba", workload="timestep", supports=TimestepSupports())
def build_numba(spec: TimestepSpec):
    """Parallel rows; below float64 one float64 reduction and two float32 polynomials per pair;
    float64: libm."""
    return _build(spec, recycle=False)


@register(name="timestep-numba-recycled", backend="numba", workload="timestep",
          supports=TimestepSupports())
def build_numba_recycled(spec: TimestepSpec):
    """timestep-numba into the memory of an embedding let go: no page faults, two kept."""
    return _build(spec, recycle=True)
