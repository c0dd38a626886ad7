"""Pure Python: the nested loops of seed 001, `math.sin`/`math.cos` per element."""

from __future__ import annotations

import math

import numpy as np

from harness import Spec, Supports, register


@register(name="seed-python-loops", backend="python",
          supports=Supports(layouts=("interleaved",), freq_shifts=(0,)))
def build_python_loops(spec: Spec):
    """Seed 001: pe[pos, i] = sin(pos / base**(i/d)), pe[pos, i+1] = cos(...)."""
    length, d_model, base, offset = spec.length, spec.d_model, spec.base, spec.offset
    dtype = np.dtype(spec.dtype)

    def table():
        pe = np.zeros((length, d_model), dtype=dtype)
        for pos in range(offset, offset + length):
            row = pos - offset
            for i in range(0, d_model, 2):
                pe[row, i] = math.sin(pos / (base ** (i / d_model)))
                pe[row, i + 1] = math.cos(pos / (base ** (i / d_model)))
        return pe

    return table
