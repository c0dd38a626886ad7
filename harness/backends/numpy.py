"""NumPy: the host array every other backend converts to; its buffers report to tracemalloc."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.backends.base import Backend
from harness.backends.host import tracemalloc_peak


def poison(x: Any) -> bool:
    if not x.flags.writeable:
        return False
    x.fill(np.nan)
    return True


BACKEND = Backend(name="numpy", distributions={"numpy": ("numpy",)}, array_modules=("numpy",),
                  to_numpy=np.asarray, poison=poison, peak={"cpu": tracemalloc_peak})
