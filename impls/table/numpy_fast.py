"""NumPy: the angle-addition identity as three ufunc passes over cache-sized slabs.

Why it is fast: NumPy's float64 sin/cos are scalar libm calls here (~15 ns each),
its float32 ones SIMD but inaccurate at large angles. This design calls float64
sin/cos only on ~2 sqrt(length / block) + 2 sqrt(block) rows (`sincos_rows`),
then writes out = P X + Q Y slab by slab: `multiply` straight into the output,
`multiply` into a slab-sized scratch, `add` in place. Each slab is 256 rows, so
the second and third passes hit L2 instead of memory; the output's pages are
faulted in up front (`first_touch`) so the faults do not evict the slab.

Where the error comes from: P, Q, X, Y are float64 (~2 ulp), rounded to the
output dtype; the two products and their sum round once each (no FMA in NumPy):
max ~1.5e-7 in float32 at any position.
"""

from __future__ import annotations

import numpy as np

from harness import Spec, register
from harness.util.memory import first_touch
from ._assemble import EVERY_CONVENTION
from ._angle_addition import column_steps, sincos_rows, to_columns

BLOCK = 64
SLAB_BLOCKS = 4   # 4 x 64 rows x 1024 float32 = 1 MiB per slab


def _arange(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64)


def _take(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.take(x, index, axis=1)


def angleadd_tables(spec: Spec, block: int, dtype: np.dtype):
    """P, Q [n_blocks, d] at every block start and X, Y [block, d] within a block.

    Computed in float64 per frequency, rounded to `dtype`, then spread over columns.
    """
    steps = column_steps(spec)
    n_blocks = -(-spec.length // block)
    sin_p, cos_p, sin_j, cos_j = (t.astype(dtype) for t in (
        *sincos_rows(np, _arange, spec.offset, block, n_blocks, steps.w),
        *sincos_rows(np, _arange, 0, 1, block, steps.w)))
    P, Q = to_columns(np, sin_p, cos_p, steps.select, take=_take)
    return P, Q, _take(cos_j, steps.freq), _take(sin_j, steps.freq)


@register(name="numpy-angleadd", backend="numpy", supports=EVERY_CONVENTION)
def build_numpy_angleadd(spec: Spec):
    """Angle addition from float64 base tables, written slab by slab: no full-size temporary."""
    dtype = np.dtype(spec.dtype)
    block = min(BLOCK, spec.length)
    n_blocks = -(-spec.length // block)

    def table():
        P, Q, X, Y = angleadd_tables(spec, block, dtype)
        out = first_touch(np.empty((n_blocks * block, spec.d_model), dtype))
        slabs = out.reshape(n_blocks, block, spec.d_model)
        scratch = np.empty((SLAB_BLOCKS, block, spec.d_model), dtype)
        for b0 in range(0, n_blocks, SLAB_BLOCKS):
            b1 = min(n_blocks, b0 + SLAB_BLOCKS)
            slab, tmp = slabs[b0:b1], scratch[: b1 - b0]
            np.multiply(P[b0:b1, None], X, out=slab)
            np.multiply(Q[b0:b1, None], Y, out=tmp)
            np.add(slab, tmp, out=slab)
        return out[: spec.length]   # a contiguous view: the rows past length are never read

    return table
