"""NumPy: the rotary cache as transformers and GPT-J build it, a fast cache, and HF's apply.

`rotary-numpy-cache` is model code (float32 angles, cos and sin of every column, both halves
computed); `rotary-numpy-cache-fast` computes only the n_freq distinct columns, by angle addition
from float64 tables (no large angle is ever rounded, and no per-element transcendental), and
writes each twice. NumPy has no bfloat16.
"""

from __future__ import annotations

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register
from ._model import build_fast_cache, build_model_apply, build_model_cache, numpy_ops
from ._supports import NUMPY


@register(name="rotary-numpy-cache", backend="numpy", workload="cache", supports=NUMPY)
def build_rotary_numpy_cache(spec: RotarySpec):
    """Model code's cache: float32 angles, cat(freqs, freqs) or repeat, cos/sin of every column."""
    return build_model_cache(numpy_ops(), spec)


@register(name="rotary-numpy-cache-fast", backend="numpy", workload="cache", supports=NUMPY)
def build_rotary_numpy_cache_fast(spec: RotarySpec):
    """n_freq distinct columns by float64-table angle addition, written twice: accurate at any position."""
    return build_fast_cache(numpy_ops(), spec)


@register(name="rotary-numpy-apply-unfused", backend="numpy", workload="apply", supports=NUMPY)
def build_rotary_numpy_apply_unfused(spec: RotarySpec, q, k, positions):
    """HF's apply: the model's cache at the positions, then x * cos + rotate_half(x) * sin."""
    return build_model_apply(numpy_ops(), spec, q, k, positions)
