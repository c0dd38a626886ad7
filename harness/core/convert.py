"""Bring any backend's result to NumPy, and name its dtype, without importing backends."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness import backends


def dtype_name(x: Any) -> str:
    """'float32', 'bfloat16', ... for numpy arrays, torch tensors and TF tensors."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return type(x).__name__
    name = getattr(dtype, "name", None) or str(dtype)  # tf.DType has .name
    return str(name).replace("torch.", "")


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy array of the same values (bfloat16 widened to float32, exactly): each backend's
    adapter knows how to bring its arrays to the host; anything else goes through np.asarray."""
    owner = backends.owner(x)
    arr = np.asarray(owner.to_numpy(x) if owner is not None and owner.to_numpy else x)
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    return arr
