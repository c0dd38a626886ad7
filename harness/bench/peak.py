"""Peak memory of one call, by the best counter its backend offers on its device.

The meters themselves live with the backends (harness.backends.host for the
host counters, each GPU backend's adapter for its allocator); this picks one.
A backend with no meter for a device gets the resident-memory one on the CPU
and the driver's free-memory delta on a GPU: both lower bounds, named per row.
"""

from __future__ import annotations

from typing import Any, Callable

from harness import backends
from harness.backends.cuda_driver import free_memory_peak
from harness.backends.host import resident_peak


def of_call(fn: Callable[[], Any], backend: str, device: str) -> tuple[int, str]:
    """(peak bytes of one call of `fn`, the method used)."""
    fallback = resident_peak if device == "cpu" else free_memory_peak
    return backends.get(backend).peak.get(device, fallback)(fn)
