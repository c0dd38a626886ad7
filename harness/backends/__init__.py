"""Backend adapters: the one place that names the array backends the harness knows.

Each module here builds one `Backend` (see base.py) that says everything the
harness needs about it. The rest of the harness asks `get(name)` or
`owner(array)`, never tests a backend's name itself. A plugin with a backend of
its own passes a `Backend` to `add`; an unknown name gets a plain host backend
(nothing to import, resident-memory peak, no threads to pin).
"""

from __future__ import annotations

from typing import Any, Optional

from harness.backends import cupy, jax, numba, numba_cuda, numpy, python, tensorflow, torch, triton
from harness.backends.base import Backend, PeakMeter
from harness.backends.host import resident_peak

ADAPTERS: dict[str, Backend] = {
    module.BACKEND.name: module.BACKEND
    for module in (python, numpy, numba, numba_cuda, torch, triton, tensorflow, cupy, jax)
}

__all__ = ["ADAPTERS", "Backend", "PeakMeter", "add", "describe", "get", "owner"]


def add(backend: Backend) -> Backend:
    """Register a plugin's own backend (a name already taken must be the same adapter)."""
    old = ADAPTERS.get(backend.name)
    if old is not None and old != backend:
        raise ValueError(f"backend {backend.name!r} is already defined by the harness")
    ADAPTERS[backend.name] = backend
    return backend


#: Backends a plugin defines, known in a process that never loads it (bench's parent) only by
#: what the process that did load it said of them (harness.core.catalog): facts, not code.
DESCRIBED: dict[str, Backend] = {}


def describe(backend: Backend) -> None:
    """Know a plugin's backend by its facts (`jit`, `threaded`, whether it can `capture`); an
    adapter `add`ed here, by the plugin itself, always wins."""
    if backend.name not in ADAPTERS:
        DESCRIBED[backend.name] = backend


def get(name: str) -> Backend:
    """The adapter of backend `name` (a plain host backend for a name nobody defined)."""
    return ADAPTERS.get(name) or DESCRIBED.get(name) or Backend(name=name, peak={"cpu": resident_peak})


def owner(x: Any) -> Optional[Backend]:
    """The backend whose array `x` is, judged by its type's module (nothing is imported)."""
    return next((b for b in ADAPTERS.values() if b.owns(x)), None)
