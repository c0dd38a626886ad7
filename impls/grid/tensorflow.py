"""TensorFlow grid: MAE's meshgrid + concat in tf ops (eager), angles in float32 or float64.

TF tensors cannot be assigned into, so only the meshgrid design is written here.
"""

from __future__ import annotations

from harness import register
from harness.core.kinds.grid import GridSpec

from ._assemble import GridOps, meshgrid_table, prepare
from harness import GridSupports


def _ops(spec: GridSpec) -> GridOps:
    import tensorflow as tf

    out = getattr(tf, spec.dtype)
    compute = tf.float64 if spec.dtype == "float64" else tf.float32

    def unsupported(rows: int, d: int):
        raise TypeError("TensorFlow tensors cannot be written in place")

    return GridOps(
        asarray=lambda a: tf.constant(a, dtype=compute),
        meshgrid=lambda arrays: tf.meshgrid(*arrays, indexing="ij"),
        outer=lambda a, b: tf.reshape(a, (-1, 1)) * tf.reshape(b, (1, -1)),
        concat=lambda parts: tf.concat(parts, axis=-1),
        cat_rows=lambda parts: tf.concat(parts, axis=0),
        interleave=lambda a, b: tf.reshape(tf.stack([a, b], axis=-1), (tf.shape(a)[0], -1)),
        zeros=lambda rows, d: tf.zeros((rows, d), dtype=out),
        empty=unsupported,
        cast=lambda x: tf.cast(x, out),
        sin=tf.sin, cos=tf.cos,
    )


@register(name="grid-tf", backend="tensorflow", workload="grid", supports=GridSupports())
def build_grid_tf(spec: GridSpec):
    """MAE's way in tf ops: tf.meshgrid, each axis's 1-D sin/cos of every cell, tf.concat."""
    ops = _ops(spec)
    axes = prepare(spec, ops)
    return lambda: meshgrid_table(spec, ops, axes)
