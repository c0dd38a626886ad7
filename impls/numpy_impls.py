"""NumPy: seed 003 (stack + reshape, float32) and its stack / cat variants."""

from __future__ import annotations

import numpy as np

from harness import Spec, Supports, register
from impls._assemble import CONCAT, EVERY_CONVENTION, INTERLEAVED, assemble


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


def numpy_table(spec: Spec) -> np.ndarray:
    """Direct formula in the output dtype, any convention: the general NumPy variant."""
    dtype = np.dtype(spec.dtype)
    k = np.arange(spec.n_freq, dtype=dtype)
    denominator = np.power(dtype.type(spec.base), k / dtype.type(spec.denominator))
    position = np.arange(spec.offset, spec.offset + spec.length, dtype=dtype)[:, None]
    theta = dtype.type(spec.scale) * position / denominator   # scale 1.0 multiplies exactly
    return assemble(
        spec, np.sin(theta), np.cos(theta), np.zeros((spec.length, 1), dtype=dtype),
        interleave=lambda a, b: np.stack([a, b], axis=2).reshape(a.shape[0], -1),
        concat=lambda parts: np.concatenate(parts, axis=1),
    )


@register(name="numpy-stack", backend="numpy", supports=INTERLEAVED)
def build_numpy_stack(spec: Spec):
    """Any interleaved convention: stack sin/cos on a new axis, then flatten."""
    return lambda: numpy_table(spec)


@register(name="numpy-cat", backend="numpy", supports=CONCAT)
def build_numpy_cat(spec: Spec):
    """Any concatenated convention: np.concatenate([sin, cos])."""
    return lambda: numpy_table(spec)


@register(name="numpy-forward", backend="numpy", workload="forward", supports=EVERY_CONVENTION)
def build_numpy_forward(spec: Spec, x: np.ndarray):
    """x + PE with the table built once in the factory (seed 001/002's register_buffer)."""
    pe = numpy_table(spec)
    return lambda: x + pe
