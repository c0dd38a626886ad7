"""The CUDA driver API through ctypes: device sync, L2 size and an L2 flush for any backend.

torch, CuPy, Numba and JAX all run in the device's primary context, so one
`cuCtxSynchronize` on it waits for every kernel any of them launched, and one
driver allocation can evict L2 between rounds whatever backend is timed. Going
through libcuda directly keeps the harness free of a torch dependency for that,
and lets a machine without a driver answer "no CUDA" instead of failing.
"""

from __future__ import annotations

import ctypes
import functools
import time
from dataclasses import dataclass
from typing import Optional

#: cuDeviceGetAttribute numbers (cuda.h, CUdevice_attribute)
ATTRIBUTES = {"sm_clock_khz": 13, "multiprocessors": 16, "memory_clock_khz": 36,
              "memory_bus_bits": 37, "l2_bytes": 38}
DEFAULT_L2_BYTES = 50 * 2**20


class CudaUnavailable(RuntimeError):
    """No driver, no device, or a driver call failed: the message says which."""


@dataclass(frozen=True)
class Driver:
    lib: ctypes.CDLL
    device: int

    def call(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise CudaUnavailable(f"{name} failed with CUDA error {status}")

    def make_current(self) -> None:
        self.call("cuCtxSetCurrent", _primary_context())

    def attribute(self, name: str) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), ATTRIBUTES[name], self.device)
        return value.value


@functools.cache
def driver() -> Driver:
    """libcuda, initialised, with device 0. No context yet: reading attributes needs none, so
    the bench parent (env.json) never holds one; syncs and flushes retain the primary one."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise CudaUnavailable(f"no CUDA driver (libcuda.so.1: {exc})") from None
    status = lib.cuInit(0)
    if status != 0:
        raise CudaUnavailable(f"cuInit failed with CUDA error {status} (no usable GPU)")
    device, count = ctypes.c_int(), ctypes.c_int()
    lib.cuDeviceGetCount(ctypes.byref(count))
    if count.value < 1:
        raise CudaUnavailable("the CUDA driver sees no device")
    Driver(lib, 0).call("cuDeviceGet", ctypes.byref(device), 0)
    return Driver(lib, device.value)


@functools.cache
def _primary_context() -> ctypes.c_void_p:
    """Device 0's primary context, the one torch, CuPy, Numba and JAX run in."""
    d, context = driver(), ctypes.c_void_p()
    d.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), d.device)
    return context


def problem() -> Optional[str]:
    """None when a CUDA device is usable here, else why not."""
    try:
        driver()
    except CudaUnavailable as exc:
        return str(exc)
    return None


def synchronize() -> None:
    """Wait for every kernel launched on the device, by any library."""
    d = driver()
    d.make_current()
    d.call("cuCtxSynchronize")


def synced_clock() -> float:
    """pytest-benchmark's timer for device cells: the device is idle at every reading, so a
    timed interval covers every kernel launched within it (launches are asynchronous)."""
    synchronize()
    return time.perf_counter()


def l2_bytes() -> int:
    try:
        return driver().attribute("l2_bytes") or DEFAULT_L2_BYTES
    except CudaUnavailable:
        return DEFAULT_L2_BYTES


@functools.cache
def l2_flush() -> "L2Flush":
    """One flush buffer per process (allocated at first use, kept to the end)."""
    return L2Flush()


class L2Flush:
    """Writes a buffer of twice the L2 size, then waits: the next round starts from a cold
    cache, as a table built once and read later by another kernel would (untimed setup)."""

    def __init__(self) -> None:
        d = driver()
        d.make_current()
        self.nbytes = 2 * l2_bytes()
        self.pointer = ctypes.c_uint64()
        d.call("cuMemAlloc_v2", ctypes.byref(self.pointer), ctypes.c_size_t(self.nbytes))

    def __call__(self) -> None:
        d = driver()
        d.make_current()
        d.call("cuMemsetD8_v2", self.pointer, ctypes.c_ubyte(0), ctypes.c_size_t(self.nbytes))
        d.call("cuCtxSynchronize")


def device_facts() -> dict[str, Optional[float]]:
    """L2 size, SM count, clocks and theoretical DRAM bandwidth for env.json (empty without GPU)."""
    try:
        d = driver()
        facts = {name: d.attribute(name) for name in ATTRIBUTES}
    except CudaUnavailable:
        return {}
    # double data rate: two transfers per memory clock over the bus
    facts["dram_gbps_theoretical"] = (2 * facts["memory_clock_khz"] * 1e3
                                      * facts["memory_bus_bits"] / 8 / 1e9)
    return facts


def _free_bytes() -> int:
    d = driver()
    d.make_current()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    d.call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
    return free.value


def free_memory_peak(fn) -> tuple[int, str]:
    """Device memory taken by one call, result alive: free memory before minus after. Any
    library's allocations count, but pooled or freed temporaries do not: a lower bound."""
    synchronize()
    before = _free_bytes()
    result = fn()
    synchronize()
    used = before - _free_bytes()
    del result
    return max(0, used), "device-free-delta"
