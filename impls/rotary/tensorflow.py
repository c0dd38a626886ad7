"""TensorFlow: the rotary cache as model code builds it, a fast cache, and HF's apply, eager.

The same formulas as NumPy and torch (impls/rotary/_model.py) in tf ops; TF tensors are
immutable, so each call returns new ones.
"""

from __future__ import annotations

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register

from ._model import build_fast_cache, build_model_apply, build_model_cache, tf_ops
from ._supports import EVERY_SPEC


@register(name="rotary-tf-cache", backend="tensorflow", workload="cache", supports=EVERY_SPEC)
def build_rotary_tf_cache(spec: RotarySpec):
    """Model code's cache in tf ops: float32 angles, tf.concat or tf.repeat, cos/sin of every column."""
    return build_model_cache(tf_ops(), spec)


@register(name="rotary-tf-cache-fast", backend="tensorflow", workload="cache", supports=EVERY_SPEC)
def build_rotary_tf_cache_fast(spec: RotarySpec):
    """n_freq distinct columns by float64-table angle addition in tf ops, written twice."""
    return build_fast_cache(tf_ops(), spec)


@register(name="rotary-tf-apply-unfused", backend="tensorflow", workload="apply", supports=EVERY_SPEC)
def build_rotary_tf_apply_unfused(spec: RotarySpec, q, k, positions):
    """HF's apply in tf ops: the cache at the positions, then x * cos + rotate_half(x) * sin."""
    return build_model_apply(tf_ops(), spec, q, k, positions)
