"""Numba: one `@njit` loop over (position, frequency), compiled in the factory."""

from __future__ import annotations

import functools

import numpy as np

from harness import Spec, register

from ._assemble import EVERY_CONVENTION
from .._numba_cache import njit as cached_njit


@functools.cache
def _kernel():
    """Compile once per process: the loop writes sin/cos straight into their columns."""

    @cached_njit()
    def direct(out, inv_freq, first_cols, second_cols, offset, scale, cos_first):
        length = out.shape[0]
        n_second = second_cols.shape[0]
        for p in range(length):
            pos = inv_freq.dtype.type(p + offset) * scale
            for k in range(first_cols.shape[0]):
                theta = pos * inv_freq[k]
                s, c = np.sin(theta), np.cos(theta)
                if cos_first:
                    s, c = c, s
                out[p, first_cols[k]] = s
                if k < n_second:
                    out[p, second_cols[k]] = c

    return direct


def _columns(spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    """Where the first and second function of each frequency go (worked out here, not taken
    from the reference's column plan, so a placement mistake cannot be shared with it)."""
    k = np.arange(spec.n_freq, dtype=np.int64)
    pairs = k[: spec.d_model // 2]
    if spec.layout == "interleaved":
        return 2 * k, 2 * pairs + 1
    return k, spec.n_freq + pairs


@register(name="numba-direct", backend="numba", supports=EVERY_CONVENTION)
def build_numba_direct(spec: Spec):
    """Direct formula in the output dtype, one fused loop, no temporaries."""
    kernel = _kernel()
    dtype = np.dtype(spec.dtype)
    inv_freq = (1.0 / np.power(spec.base, np.arange(spec.n_freq) / spec.denominator)).astype(dtype)
    first, second = _columns(spec)
    scale = dtype.type(spec.scale)
    # compile (JIT) for these argument types now, outside the timed call
    kernel(np.empty((1, spec.d_model), dtype), inv_freq, first, second, 0, scale, spec.cos_first)

    def table():
        out = np.zeros((spec.length, spec.d_model), dtype)
        kernel(out, inv_freq, first, second, spec.offset, scale, spec.cos_first)
        return out

    return table
