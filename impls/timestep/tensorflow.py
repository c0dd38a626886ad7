"""TensorFlow timestep embedding: diffusers' formula in tf ops, eager.

Angles in float32 (float64 for float64 output), one `tf.concat` of the two blocks in their
order and the zero column, then a cast to the output dtype: TensorFlow writes all four dtypes.
"""

from __future__ import annotations

import math

from harness import TimestepSupports, register
from harness.core.kinds.timestep import TimestepSpec


@register(name="timestep-tf", backend="tensorflow", workload="timestep", supports=TimestepSupports())
def build_tf(spec: TimestepSpec):
    """exp(-ln(max_period) k / (half - shift)), t * freq * scale, one tf.concat, a cast."""
    import tensorflow as tf

    work = tf.float64 if spec.dtype == "float64" else tf.float32
    timesteps = tf.constant(spec.timesteps, dtype=work)
    out_dtype, half, odd = getattr(tf, spec.dtype), spec.half, spec.dim % 2 == 1
    log_period, divisor, scale = math.log(spec.max_period), spec.half - spec.freq_shift, spec.scale
    cos_first, count = spec.cos_first, spec.count

    def embed():
        freqs = tf.exp(-log_period * tf.range(half, dtype=work) / divisor)
        theta = scale * (timesteps[:, None] * freqs[None, :])
        blocks = [tf.cos(theta), tf.sin(theta)] if cos_first else [tf.sin(theta), tf.cos(theta)]
        if odd:
            blocks.append(tf.zeros((count, 1), dtype=work))
        return tf.cast(tf.concat(blocks, axis=1), out_dtype)

    return embed
