"""TensorFlow: immutable tensors (never poisoned: verify demands a new object instead), intra
and inter-op pools, resident-memory peak on the CPU."""

from __future__ import annotations

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import resident_peak


def pin_threads(threads: int) -> str:
    import tensorflow as tf

    threading = tf.config.threading
    try:
        threading.set_intra_op_parallelism_threads(threads)
        threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime is already initialised
        pass
    return (f"tf intra={threading.get_intra_op_parallelism_threads()} "
            f"inter={threading.get_inter_op_parallelism_threads()}")


BACKEND = Backend(
    name="tensorflow", install="pip install 'pe-harness[tensorflow]'", modules=("tensorflow",),
    distributions={"tensorflow": ("tensorflow", "tensorflow-cpu")},
    array_modules=("tensorflow",), to_numpy=lambda x: np.asarray(x.numpy()),
    pin_threads=pin_threads, peak={"cpu": resident_peak},
)
