"""NumPy: seed 003 (stack + reshape, float32) and its two general variants.

`numpy-stack` (stack + reshape, interleaved layouts) and `numpy-cat` (one
concatenate, concat layouts) compute the same sin/cos blocks by the direct
formula in the output dtype and differ in how they lay them out.
"""

from __future__ import annotations

import numpy as np

from harness import Spec, Supports, register
from ._assemble import EVERY_CONVENTION, Library, register_general


@register(name="seed-numpy-stack", backend="numpy",
          supports=Supports(layouts=("interleaved",), freq_shifts=(0,)))
def build_seed_numpy(spec: Spec):
    """Seed 003: np.power(base, even_i/d), sin/cos of position/denominator, stack, reshape."""
    dtype = np.dtype(spec.dtype)
    length, d_model, base, offset = spec.length, spec.d_model, spec.base, spec.offset

    def table():
        even_i = np.arange(0, d_model, 2, dtype=dtype)
        denominator = np.power(dtype.type(base), even_i / dtype.type(d_model))
        position = np.arange(offset, offset + length, dtype=dtype).reshape(length, 1)
        even_pe = np.sin(position / denominator)
        odd_pe = np.cos(position / denominator)
        stacked = np.stack([even_pe, odd_pe], axis=2)
        return np.reshape(stacked, (stacked.shape[0], stacked.shape[1] * stacked.shape[2]))

    return table


def _blocks(spec: Spec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sin and cos [length, n_freq] by the direct formula in the output dtype, and a zero column."""
    dtype = np.dtype(spec.dtype)
    k = np.arange(spec.n_freq, dtype=dtype)
    denominator = np.power(dtype.type(spec.base), k / dtype.type(spec.denominator))
    position = np.arange(spec.offset, spec.offset + spec.length, dtype=dtype)[:, None]
    theta = dtype.type(spec.scale) * position / denominator   # scale 1.0 multiplies exactly
    return np.sin(theta), np.cos(theta), np.zeros((spec.length, 1), dtype=dtype)


def _stack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([a, b], axis=2).reshape(a.shape[0], -1)


def _concat(parts: list) -> np.ndarray:
    return np.concatenate(parts, axis=1)


NUMPY = Library(_blocks, interleave=_stack, concat=_concat)
register_general(NUMPY, "numpy", "numpy", __name__,
                 ("stack sin/cos on a new axis, then flatten", "np.concatenate([sin, cos])"))


@register(name="numpy-forward", backend="numpy", workload="forward", supports=EVERY_CONVENTION)
def build_numpy_forward(spec: Spec):
    """x + PE with the table built once in the factory (seed 001/002's register_buffer)."""
    pe = NUMPY.table(spec)
    return lambda x: x + pe
