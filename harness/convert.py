"""Bring any backend's result to NumPy, and name its dtype, without importing backends."""

from __future__ import annotations

from typing import Any

import numpy as np


def dtype_name(x: Any) -> str:
    """'float32', 'bfloat16', ... for numpy arrays, torch tensors and TF tensors."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return type(x).__name__
    name = getattr(dtype, "name", None) or str(dtype)  # tf.DType has .name
    return str(name).replace("torch.", "")


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy array of the same values (bfloat16 widened to float32, exactly)."""
    module = type(x).__module__
    if module.startswith("torch"):
        t = x.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    if module.startswith("tensorflow") or hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    arr = np.asarray(x)
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    return arr
