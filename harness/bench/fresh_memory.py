"""A first call's memory: new on every side the roofs step pairs, at every size.

Why: a first call's time is mostly the kernel faulting in and zeroing its new output's pages.
glibc's malloc serves a block from free memory it holds before it maps new memory, and maps
anew only blocks past its threshold, which rises to the largest block freed (up to 32 MiB):
after the steady rounds had freed 16 MiB rotary caches, every "first call" of that size wrote
into pages already faulted in (0.6-0.9 ms against 5-10 ms in new memory), while a 48 MiB grid
always got a new mapping, and which side of a pair reused memory depended on the order of the
rounds. `fresh_mappings` lowers the threshold while first calls are timed, and `release` hands
malloc's free pages back to the kernel before each call, so that every output, and every
temporary of a call, is new memory faulted in and zeroed by the kernel, as in a process's first
call (docs/fast.md, *First calls in new memory*).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
from typing import Iterator, Optional

#: Blocks of at least this many bytes are new mappings while first calls are timed (glibc).
FRESH_FROM_BYTES = 1 << 20
#: glibc's largest dynamic mmap threshold (64-bit), and the trim threshold that goes with it
#: (twice): where a worker's dynamic ones end once it freed large outputs (`warmed`).
GLIBC_THRESHOLD_MAX = 32 << 20
GLIBC_TRIM_MAX = 2 * GLIBC_THRESHOLD_MAX
#: mallopt's parameter numbers (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


@functools.cache
def _glibc() -> Optional[ctypes.CDLL]:
    """glibc, or None (another C library: its allocator is left as it is)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None
    if not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return None
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def set_mmap_threshold(nbytes: int) -> bool:
    """Blocks of `nbytes` or more mapped anew by glibc's malloc from now on (when no free memory
    it holds fits them: `release`); whether it took."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, int(nbytes)) == 1)


def warmed() -> bool:
    """glibc's thresholds fixed where a worker's dynamic ones end after it freed large outputs
    (blocks under 32 MiB from its heap, reused; up to 64 MiB of free heap kept): every output's
    steady rounds see the same allocator, whatever ran before; whether glibc took it."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_TRIM_THRESHOLD, GLIBC_TRIM_MAX) == 1
                and set_mmap_threshold(GLIBC_THRESHOLD_MAX))


def release() -> None:
    """Every whole free page glibc's malloc holds handed back to the kernel (malloc_trim): a block
    it serves from them next is faulted in anew."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@contextlib.contextmanager
def fresh_mappings(from_bytes: int = FRESH_FROM_BYTES) -> Iterator[bool]:
    """Within: every block of `from_bytes` or more is new memory (yields whether glibc took it);
    after: `warmed`."""
    took = set_mmap_threshold(from_bytes)
    release()
    try:
        yield took
    finally:
        if took:
            warmed()
