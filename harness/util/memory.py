"""Refuse tables this machine cannot hold, before anything is allocated."""

from __future__ import annotations

import math
import os

import numpy as np

from harness.util.exitcodes import UsageError

#: Tables below this always fit: skip reading /proc/meminfo for the many small Specs.
CHECK_ABOVE = 64 << 20
#: Bytes per page: first_touch writes one element per page (huge pages are 512 of them).
PAGE = 4096


def available_bytes() -> int:
    """Memory the OS says a new allocation can use now (MemAvailable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown platform: do not refuse


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")


def check_fits(nbytes: int, what: str) -> None:
    """Raise ValueError when `nbytes` exceed the memory available now."""
    available = available_bytes()
    if nbytes > available:
        raise UsageError(
            f"{what} needs {human_bytes(nbytes)}, but only {human_bytes(available)} "
            "of memory is available: reduce length or d_model"
        )


def first_touch(out: np.ndarray) -> np.ndarray:
    """Fault in every page of a fresh buffer from this thread, one store per page, and return it.

    A fresh 32 MiB table costs as much in page faults (the kernel zeroing each page)
    as in writing it. For a writer whose compute loop keeps small tables in cache (a
    NumPy slab, torch's cache build), faults taken inside the loop evict them: faulted
    in first, a 2-thread NumPy table went from 1.8x its fill roof to 1.2x. Not for a
    kernel whose own threads write every page anyway: there this pass zeroes each page
    past the L3 before the kernel writes it again (Numba kernels faulting their own
    output, 2 threads: bfloat16 table 15.6 -> 7.9 ms, float32 grid 15.7 -> 12.0).
    """
    out.reshape(-1)[:: max(1, PAGE // out.itemsize)] = 0
    return out


def aligned_owner(shape: tuple[int, ...], dtype, align: int) -> np.ndarray:
    """Bytes for an array of `shape` and `dtype` whose start can be `align`-aligned (`aligned`):
    `np.empty` starts large arrays 16 bytes past a page, and streaming stores need 32."""
    return np.empty(int(np.prod(shape)) * np.dtype(dtype).itemsize + align, np.uint8)


def aligned(owner: np.ndarray, shape: tuple[int, ...], dtype, align: int) -> np.ndarray:
    """The `align`-aligned array of `shape` and `dtype` inside `owner` (`aligned_owner`). Called
    on every recycled output a call hands back: `math.prod`, not `np.prod` (a ufunc reduce,
    several microseconds a call)."""
    skip = -owner.ctypes.data % align
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    return owner[skip:skip + nbytes].view(dtype).reshape(shape)
