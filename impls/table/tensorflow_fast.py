"""TensorFlow under XLA: the direct formula fused, and angle addition fused.

Every callable is a `tf.function(jit_compile=True)` built in the factory and
traced and XLA-compiled at its first call, which the bench reports as
`first_call_s`. (A plain `tf.function` of the direct formula was measured and
dropped: it removes ~10 eager dispatches, nothing of the arithmetic; docs/fast.md.)

- `tf-function-xla`: the direct formula, one sin per element, fused by XLA into a
  single loop. Angles are formed and reduced to [-pi, pi] in float64 inside the
  fused loop (never stored), then cast to float32 for the sin: the error is the
  cast of a reduced angle plus the float32 sin, ~1.4e-7 at any position.
  cos columns are sin(theta + pi/2), padding is multiplied by 0.
- `tf-angleadd-xla`: angle addition (`impls.table._angle_addition`), base tables in float64
  TF ops (a graph), the per-element P X + Q Y fused by XLA into one store per element.
"""

from __future__ import annotations

import math

from harness import Spec, register

from ._assemble import EVERY_CONVENTION
from ._angle_addition import column_steps, sincos_rows, to_columns

BLOCK = 64


class _Steps:
    """The Spec's ColumnSteps as TF constants (created in the factory, not per call)."""

    def __init__(self, spec: Spec):
        import tensorflow as tf

        steps = column_steps(spec)
        self.w = tf.constant(steps.w)
        self.freq = tf.constant(steps.freq)
        self.select = tuple(tf.constant(s) for s in steps.select)
        self.column_w = tf.constant(steps.column_w)
        self.phase = tf.constant(steps.b * (math.pi / 2))   # cos = sin(. + pi/2)
        self.mask = tf.constant(steps.a + steps.b)           # 0 on padding columns


def _direct(spec: Spec, steps: _Steps):
    """One sin per element; for float32, of a float64 angle reduced to [-pi, pi] then cast."""
    import tensorflow as tf

    dtype = getattr(tf, spec.dtype)
    position = tf.range(spec.offset, spec.offset + spec.length, dtype=tf.float64)[:, None]
    theta = position * steps.column_w + steps.phase
    if spec.dtype != "float64":
        theta = theta - (2 * math.pi) * tf.round(theta * (0.5 / math.pi))
    return tf.sin(tf.cast(theta, dtype)) * tf.cast(steps.mask, dtype)


def _angleadd_tables(spec: Spec, steps: _Steps, block: int):
    """P, Q [n_blocks, d] and X, Y [block, d] from float64 TF ops, cast to the output dtype."""
    import tensorflow as tf

    def arange(n: int):
        return tf.range(n, dtype=tf.float64)

    def take(x, index):
        return tf.gather(x, index, axis=1)

    n_blocks = -(-spec.length // block)
    dtype = getattr(tf, spec.dtype)
    sin_p, cos_p, sin_j, cos_j = (tf.cast(t, dtype) for t in (
        *sincos_rows(tf, arange, spec.offset, block, n_blocks, steps.w),
        *sincos_rows(tf, arange, 0, 1, block, steps.w)))
    P, Q = to_columns(tf, sin_p, cos_p, steps.select, take=take)
    return P, Q, take(cos_j, steps.freq), take(sin_j, steps.freq)


def _combine(P, Q, X, Y, length: int):
    """out = P X + Q Y over [n_blocks, block, d], reshaped to the table's rows."""
    import tensorflow as tf

    out = P[:, None, :] * X + Q[:, None, :] * Y
    return tf.reshape(out, (-1, P.shape[1]))[:length]


def _tf():
    """TensorFlow, with its retracing warning off: a fresh tf.function per build is by design
    (each traces once, for its Spec), not the retracing-in-a-loop that warning is about."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    return tf


@register(name="tf-function-xla", backend="tensorflow", supports=EVERY_CONVENTION)
def build_tf_function_xla(spec: Spec):
    """Direct formula fused by XLA, angles reduced in float64 inside the loop: accurate at any position."""
    tf = _tf()

    steps = _Steps(spec)
    return tf.function(lambda: _direct(spec, steps), jit_compile=True)


@register(name="tf-angleadd-xla", backend="tensorflow", supports=EVERY_CONVENTION)
def build_tf_angleadd_xla(spec: Spec):
    """Angle addition fused by XLA: two multiply-adds and one store per element."""
    tf = _tf()

    steps = _Steps(spec)
    block = min(BLOCK, spec.length)
    # Two functions: inside one XLA cluster, XLA fuses the base tables' sin/cos into the
    # per-element loop and recomputes them for every element (~25x slower, measured).
    tables = tf.function(lambda: _angleadd_tables(spec, steps, block))
    combine = tf.function(lambda *t: _combine(*t, spec.length), jit_compile=True)
    return lambda: combine(*tables())
