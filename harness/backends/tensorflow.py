"""TensorFlow: immutable tensors (never poisoned: verify demands a new object instead), intra
and inter-op pools, resident-memory peak on the CPU.

TensorFlow's C++ runtime logs banners (oneDNN, CPU features, XLA) to stderr at import; they
land in the middle of `verify`, `conventions` and `precision` output. TF_CPP_MIN_LOG_LEVEL
quiets most of them (a user's setting wins), but TF 2.21 writes the oneDNN notice through absl
before any log level applies, so `prepare` imports tensorflow with those lines filtered out of
file descriptor 2 (everything else it writes there is passed on).
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import resident_peak

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
BANNERS = ("All log messages before absl::InitializeLog", "oneDNN custom operations are on")


def import_quietly() -> None:
    """Import tensorflow with its start-up banners dropped from stderr."""
    if "tensorflow" in sys.modules:
        return
    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        except ImportError:
            pass                      # its implementations say so when they are built
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        kept = [line for line in caught.read().decode(errors="replace").splitlines()
                if not any(banner in line for banner in BANNERS)]
    if kept:
        print("\n".join(kept), file=sys.stderr)


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


def inputs(arr: np.ndarray, dtype: str, device: str) -> Any:
    """A NumPy input as a new tensor: floats in the spec's dtype, integers int64."""
    import tensorflow as tf

    if arr.dtype.kind != "f":
        return tf.constant(arr, dtype=tf.int64)
    return tf.cast(tf.constant(arr), getattr(tf, dtype))


BACKEND = Backend(
    name="tensorflow", install="pip install 'pe-harness[tensorflow]'", modules=("tensorflow",),
    distributions={"tensorflow": ("tensorflow", "tensorflow-cpu")},
    array_modules=("tensorflow",), to_numpy=lambda x: np.asarray(x.numpy()),
    pin_threads=pin_threads, peak={"cpu": resident_peak}, prepare=import_quietly,
    inputs=inputs,
)
