"""TensorFlow: seed 003 in tf ops (stack + reshape) and its two general variants.

`tf-stack` (stack + reshape, interleaved layouts) and `tf-cat` (one concat,
concat layouts) compute the same blocks by the direct formula in the output
dtype and differ in how they lay them out.
"""

from __future__ import annotations

from harness import Spec, Supports, register
from ._assemble import EVERY_CONVENTION, Library, register_general


def _dtype(spec: Spec):
    import tensorflow as tf

    return getattr(tf, spec.dtype)


@register(name="seed-tf-stack", backend="tensorflow",
          supports=Supports(layouts=("interleaved",), freq_shifts=(0,)))
def build_seed_tf(spec: Spec):
    """Seed 003 in TensorFlow ops: tf.pow(base, even_i/d), sin/cos, tf.stack(axis=2), reshape."""
    import tensorflow as tf

    dtype = _dtype(spec)
    length, d_model, base, offset = spec.length, spec.d_model, spec.base, spec.offset

    def table():
        even_i = tf.range(0, d_model, 2, dtype=dtype)
        denominator = tf.pow(tf.constant(base, dtype), even_i / d_model)
        position = tf.reshape(tf.range(offset, offset + length, dtype=dtype), (length, 1))
        even_pe = tf.sin(position / denominator)
        odd_pe = tf.cos(position / denominator)
        stacked = tf.stack([even_pe, odd_pe], axis=2)
        return tf.reshape(stacked, (length, d_model))

    return table


def _blocks(spec: Spec):
    """sin and cos [length, n_freq] by the direct formula in the output dtype, and a zero column."""
    import tensorflow as tf

    dtype = _dtype(spec)
    k = tf.range(spec.n_freq, dtype=dtype)
    denominator = tf.pow(tf.constant(spec.base, dtype), k / spec.denominator)
    position = tf.range(spec.offset, spec.offset + spec.length, dtype=dtype)[:, None]
    theta = spec.scale * position / denominator   # scale 1.0 multiplies exactly
    return tf.sin(theta), tf.cos(theta), tf.zeros((spec.length, 1), dtype=dtype)


def _stack(a, b):
    import tensorflow as tf

    return tf.reshape(tf.stack([a, b], axis=2), (a.shape[0], -1))


def _concat(parts):
    import tensorflow as tf

    return tf.concat(parts, axis=1)


TENSORFLOW = Library(_blocks, interleave=_stack, concat=_concat)
register_general(TENSORFLOW, "tf", "tensorflow", __name__,
                 ("tf.stack(axis=2) + reshape, eager", "tf.concat([sin, cos], axis=1), eager"))


@register(name="tf-forward", backend="tensorflow", workload="forward", supports=EVERY_CONVENTION)
def build_tf_forward(spec: Spec):
    """x + PE with the table built once in the factory."""
    pe = TENSORFLOW.table(spec)
    return lambda x: x + pe
