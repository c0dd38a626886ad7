"""NumPy: the rotary cache as transformers and GPT-J build it, a fast cache, and HF's apply.

`rotary-numpy-cache` is model code (float32 angles, cos and sin of every column, both halves
computed); `rotary-numpy-cache-fast` computes only the n_freq distinct columns, by angle addition
from float64 tables (no large angle is ever rounded, and no per-element transcendental), and
writes each twice. NumPy has no bfloat16.
"""

from __future__ import annotations

from ._model import numpy_ops, register_model_code
from ._supports import NUMPY

register_model_code("rotary-numpy", "numpy", numpy_ops, NUMPY, __name__, "")
