"""glibc's heap in a timing process: one steady state for every worker, new memory on request.

Why steady: a call that allocates its output (torch, NumPy, a Numba kernel's np.empty) either
reuses pages malloc holds or faults in new ones, and with glibc's defaults which one is luck.
Its mmap threshold rises to the largest block freed (up to 32 MiB) and it gives the top of its
heap back to the kernel past twice that, so whether a block comes back from the heap already
faulted in depends on what else happens to be allocated above it. seed-torch-stack (4096 x 512
float32, one thread) ran 7.7 ms in one process of five and 20-25 ms in the other four, every
call of those taking 5,092 page faults; the compare gate saw such a process's luck as a 1.5-1.9x
change of unchanged code. With both thresholds fixed (`STEADY`: dynamic adjustment off) every
process ran it in 7.5-9.3 ms: blocks up to 32 MiB are reused from the heap, larger ones are
mapped anew by every call, in every process alike.

Why `release`: a first call is meant to write into new memory, as a process's first call does;
handing every free page malloc holds back to the kernel (`malloc_trim`) makes the next blocks it
serves new pages, faulted in and zeroed anew (harness.bench.pairing), and lets a resident-memory
meter see a call's temporaries (harness.backends.host).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import Mapping, Optional

#: glibc's largest mmap threshold on 64-bit (HEAP_MAX_SIZE / 2), and a trim threshold no heap
#: reaches: blocks up to 32 MiB come from the heap and stay there once freed.
STEADY = {"glibc.malloc.mmap_threshold": str(32 << 20),
          "glibc.malloc.trim_threshold": str(1 << 40)}
TUNABLES = "GLIBC_TUNABLES"


def steady_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """GLIBC_TUNABLES for a timing process: STEADY, after any malloc tunable the user set
    (theirs win: an experiment with the allocator is theirs to run). Ignored by other C
    libraries."""
    given = [t for t in environ.get(TUNABLES, "").split(":") if t]
    names = {t.split("=", 1)[0] for t in given}
    ours = [f"{k}={v}" for k, v in STEADY.items() if k not in names]
    return {TUNABLES: ":".join(given + ours)}


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
