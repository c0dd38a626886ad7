"""A first call's memory: new and alike for every contender the roofs step pairs.

Why: a first call's time is mostly the kernel faulting in and zeroing its new output's pages,
and on the 2-core VM two things decided which side of a pair paid more, round by round, more
than the kernels did (docs/fast.md, *First calls*):

- glibc's malloc serves a block from free memory it holds before it maps new memory, and maps
  anew only blocks past its threshold, which rises to the largest block freed (up to 32 MiB):
  after the steady rounds had freed 16 MiB rotary caches, every "first call" of that size
  wrote into pages already faulted in (0.9 ms against 5-10 ms fresh), while a 48 MiB grid
  always got a new mapping. `fresh_mappings` lowers the threshold while first calls are timed
  and `prime` hands malloc's free pages back to the kernel before each call, so that every
  output is new memory, faulted in and zeroed by the kernel, on every side and at every size.
- the VM's balloon device reports guest pages that stay free for a while to the host, which
  drops them: a call drawing such pages pays the host's faults too (a 32 MiB allocate-and-fill
  took 40-120 ms so, 4-6 ms otherwise, whichever contender drew them). `prime(nbytes)` first
  faults in and unmaps as many bytes, so the pages the call then draws were in use a moment
  before.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import mmap
from typing import Iterator, Optional

import numpy as np

#: Blocks of at least this many bytes are new mappings while first calls are timed (glibc).
FRESH_FROM_BYTES = 1 << 20
#: glibc's largest dynamic mmap threshold (64-bit), and the trim threshold that goes with it
#: (twice): where a worker's dynamic ones end once it freed large outputs (`warmed`).
GLIBC_THRESHOLD_MAX = 32 << 20
GLIBC_TRIM_MAX = 2 * GLIBC_THRESHOLD_MAX
#: mallopt's parameter numbers (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: One store per this many bytes faults in every page (4 KiB; a huge page takes 512 of them).
PAGE = 4096


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


def prime(nbytes: int) -> None:
    """Fault in `nbytes` of new memory (huge pages asked for, as NumPy asks), unmap it, and
    `release` malloc's free pages: the next allocation is new memory whose pages were in use a
    moment ago (not handed back to the VM's host meanwhile)."""
    if nbytes > 0:
        block = mmap.mmap(-1, int(nbytes))
        if hasattr(mmap, "MADV_HUGEPAGE"):
            block.madvise(mmap.MADV_HUGEPAGE)
        pages = np.frombuffer(block, np.uint8)
        pages[::PAGE] = 1
        del pages                     # the buffer let go, so that the mapping can close
        block.close()
    release()
