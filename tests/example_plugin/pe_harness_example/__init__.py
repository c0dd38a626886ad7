"""An example third-party plugin: the paper's table in NumPy, float64 angles cast once."""

import numpy as np

from harness import Spec, Supports, register


@register(name="example-entry-point", backend="numpy",
          supports=Supports(layouts=("interleaved",), freq_shifts=(0,)))
def build(spec: Spec):
    inv = spec.base ** (-np.arange(spec.d_model // 2) / spec.denominator)

    def table():
        theta = (np.arange(spec.length) + spec.offset)[:, None] * inv
        out = np.empty((spec.length, spec.d_model), dtype=spec.dtype)
        out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
        return out

    return table
