"""CuPy: the same float64-angle, float32-sine kernel as Triton's, as a CuPy ElementwiseKernel.

One thread per element: its row and column come from the flat index, its
frequency and phase from two d_model-long vectors (impls/table/_device_columns.py).
CuPy has no bfloat16, so half precision is float16 only.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from harness import Spec, register

from ._assemble import EVERY_CONVENTION
from ._device_columns import frequencies_and_phases

CUPY_DTYPES = replace(EVERY_CONVENTION, dtypes=("float16", "float32", "float64"))

SOURCE = r"""
const long long row = i / d_model, col = i % d_model;
const double angle = (double)(row + offset) * freq[col];
const double reduced = fma(-rint(angle * 0.15915494309189535), 6.283185307179586, angle)
                       + phase[col];
out = (T)(sizeof(T) == 8 ? sin(reduced) : (double)sinf((float)reduced));
"""


@functools.cache
def _kernel():
    import cupy

    return cupy.ElementwiseKernel("raw float64 freq, raw float64 phase, int64 d_model, int64 offset",
                                  "T out", SOURCE, "pe_sincos_table")


@register(name="cupy-table", backend="cupy", device="cuda", supports=CUPY_DTYPES)
def build_cupy_table(spec: Spec):
    """One CuPy ElementwiseKernel: float64 angle reduced mod 2 pi, one float32 sine per element."""
    import cupy

    kernel = _kernel()
    freq, phase = (cupy.asarray(v) for v in frequencies_and_phases(spec))
    shape, dtype = (spec.length, spec.d_model), cupy.dtype(spec.dtype)

    def table():
        return kernel(freq, phase, spec.d_model, spec.offset, cupy.empty(shape, dtype))

    return table
