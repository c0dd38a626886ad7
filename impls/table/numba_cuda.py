"""numba.cuda: the float64-angle, float32-sine kernel written in Python for the GPU.

A 2-D grid of 128 x 4 threads per block, one element per thread, the 128
along a row so that a warp writes 128 contiguous bytes. Numba maps
`math.sin` of a float32 to CUDA's sinf and of a float64 to sin, so the same
kernel source serves float32 and float64 tables (compiled once per dtype).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from harness import Spec, register

from ._assemble import EVERY_CONVENTION
from ._device_columns import frequencies_and_phases

THREADS = (128, 4)   # (columns, rows) per block: x is the fastest axis
TWO_PI, INV_TWO_PI = 2 * math.pi, 0.5 / math.pi


@functools.cache
def _kernels():
    from numba import cuda, float32

    def make(narrow: bool):
        @cuda.jit
        def sincos_table(out, freq, phase, offset):
            col, row = cuda.grid(2)
            if row < out.shape[0] and col < out.shape[1]:
                angle = float(row + offset) * freq[col]
                reduced = angle - math.floor(angle * INV_TWO_PI + 0.5) * TWO_PI + phase[col]
                out[row, col] = math.sin(float32(reduced)) if narrow else math.sin(reduced)

        return sincos_table

    return {"float32": make(True), "float64": make(False)}


@register(name="numba-cuda-table", backend="numba-cuda", device="cuda", supports=EVERY_CONVENTION)
def build_numba_cuda_table(spec: Spec):
    """A numba.cuda kernel: float64 angle reduced mod 2 pi, one float32 sine per element."""
    from numba import cuda

    kernel = _kernels()[spec.dtype]
    freq, phase = (cuda.to_device(v) for v in frequencies_and_phases(spec))
    shape, dtype = (spec.length, spec.d_model), np.dtype(spec.dtype)
    blocks = (-(-spec.d_model // THREADS[0]), -(-spec.length // THREADS[1]))

    def table():
        out = cuda.device_array(shape, dtype)
        kernel[blocks, THREADS](out, freq, phase, spec.offset)
        return out

    return table
