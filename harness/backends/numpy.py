"""NumPy: the host array every other backend converts to; its buffers report to tracemalloc."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import tracemalloc_peak


def poison(x: Any) -> bool:
    """NaN in place; an integer array (a kernel's float16 or bfloat16 bits held as uint16) gets
    every bit set, which is NaN in both half formats."""
    if not x.flags.writeable:
        return False
    if np.issubdtype(x.dtype, np.integer):
        x.fill(np.iinfo(x.dtype).max if np.issubdtype(x.dtype, np.unsignedinteger) else -1)
    elif np.issubdtype(x.dtype, np.inexact):
        x.fill(np.nan)
    else:
        return False
    return True


def negate(x: Any) -> bool:
    """-x in place, for a writeable float array."""
    if not (x.flags.writeable and np.issubdtype(x.dtype, np.floating)):
        return False
    np.negative(x, out=x)
    return True


BACKEND = Backend(name="numpy", distributions={"numpy": ("numpy",)}, array_modules=("numpy",),
                  to_numpy=np.asarray, poison=poison, peak={"cpu": tracemalloc_peak},
                  negate=negate)
