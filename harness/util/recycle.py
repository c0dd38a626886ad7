"""Output buffers reused once nothing refers to them: tables at any size without page faults.

Why: above glibc's mmap threshold (32 MiB) every `np.empty` is a fresh mapping,
so each call also pays the kernel to zero its pages, which costs as much as
writing the table (docs/fast.md). Below that size malloc already hands freed
blocks back to every implementation and roof alike. A builder that keeps its
last outputs, and reuses one only when no array, view, tensor or memoryview
still holds it, gets the small-table behaviour at every size. The price: up to
`keep` tables stay allocated for as long as the builder lives.

Holders are counted with `sys.getrefcount`: every NumPy view keeps a reference
to the array that owns the memory, and so do `torch.from_numpy` and buffer
exports. A bare address (`arr.ctypes.data`) holds nothing, as with any freed
array. A lock makes `take` safe to call from several threads.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, Optional

import numpy as np


def _refcounts(buffers: list[np.ndarray]) -> list[int]:
    """Each buffer's reference count as seen from here (list, loop and argument included)."""
    return [sys.getrefcount(buffer) for buffer in buffers]


#: What `_refcounts` reports for a buffer only the list holds, measured on this interpreter.
IDLE_REFCOUNT = _refcounts([np.empty(0)])[0]


class RecycledBuffers:
    """Hands out arrays of one shape and dtype, reusing the memory of ones no longer held."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype | str, keep: int = 2,
                 allocate: Optional[Callable[[], np.ndarray]] = None,
                 view: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> None:
        """`allocate`: how a new buffer is made (default `np.empty`); a builder that faults
        pages in from one thread (`harness.util.memory.first_touch`) passes that here.
        `view`: how a buffer is handed out (default `buffer.view()`); an allocator that returns
        a larger owner (for alignment) passes the view of its part here, so that holders are
        counted on the memory's owner."""
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.keep = keep
        self._allocate = allocate or (lambda: np.empty(self.shape, self.dtype))
        self._view = view or (lambda buffer: buffer.view())
        self._owned: list[np.ndarray] = []
        self._lock = threading.Lock()   # between the idle check and the view that ends it

    def take(self) -> np.ndarray:
        """An array nothing else refers to (contents undefined): a kept one if one is idle,
        else a new one, kept while fewer than `keep` are."""
        with self._lock:
            for buffer, refs in zip(self._owned, _refcounts(self._owned)):
                if refs == IDLE_REFCOUNT:
                    return self._view(buffer)   # the view holds `buffer` until the caller lets it go
            buffer = self._allocate()
            if len(self._owned) < self.keep:
                self._owned.append(buffer)
                return self._view(buffer)
            return self._view(buffer)

    @property
    def kept_bytes(self) -> int:
        """Memory held between calls."""
        return sum(buffer.nbytes for buffer in self._owned)
