"""A first call's memory: new on every side the roofs step pairs, at every size.

Why: a first call's time is mostly the kernel faulting in and zeroing its new output's pages.
glibc's malloc maps anew only blocks past its mmap threshold, which rises to the largest block
freed (up to 32 MiB), and serves smaller ones from free memory it holds, pages already faulted
in: in the roofs step, after the steady rounds, the half dtypes' 16-32 MiB first calls wrote
into such memory on one side or both (the bfloat16 cache's in 0.9 ms, nothing faulted, against
2-3 ms new), while a 48 MiB grid always got a new mapping. `release` before each first call
hands every free page malloc holds back to the kernel (`malloc_trim`), so that a block served
from them is faulted in and zeroed anew, as a new mapping's pages are: outputs and temporaries
are new memory on every side, at every size, as in a process's first call. malloc's thresholds
are left alone, so the steady rounds allocate as a sweep's worker does (docs/fast.md, *First
calls in new memory*).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Optional


@functools.cache
def _glibc() -> Optional[ctypes.CDLL]:
    """glibc, or None (another C library: its allocator is left as it is)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None
    if not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "malloc_trim")):
        return None
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def release() -> bool:
    """Every whole free page glibc's malloc holds handed back to the kernel (malloc_trim): a block
    it serves from them next is faulted in anew. Whether there was a glibc to ask."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
