"""How a roof's output memory is made and handed back (harness.bench.roofs): fresh `np.empty`
every call (the first call's yardstick) or memory the previous call let go, in the host dtype
(bfloat16 as uint16 bits, handed back as torch's view, as the Numba kernels do), torch imported
and its threads started in setup."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from harness.core import kinds
from harness.util.memory import first_touch
from harness.util.recycle import RecycledBuffers


@functools.cache
def started_torch():
    """torch, imported and its intra-op threads started (one fill large enough to run in
    parallel): in a roof's setup, as the Numba kernels compile and run once in theirs, so that
    no roof's first call pays for either (the first torch fill of a bench worker took 50 ms
    more than the next)."""
    import torch

    torch.empty(1 << 16).fill_(1.0)
    return torch


def output_shape(work: kinds.Workload, spec: Any) -> tuple[int, ...]:
    """What one call of a workload without inputs writes (parts stacked): the same bytes."""
    return work.shape(spec, 1, 1)


def as_result(work: kinds.Workload) -> Callable[[Any], Any]:
    """How one allocation is handed back as the workload's result: the array, or a view per part
    (a rotary cache's cos and sin), which is what bench's result checks expect. Decided in
    setup, so the timed call pays nothing for it."""
    if work.parts:
        return tuple
    return lambda out: out


#: NumPy has no bfloat16: a recycled roof keeps its bits in uint16 and hands back a torch view.
BFLOAT16_ONE = 0x3F80


def host_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a host buffer holding `dtype`'s bytes (bfloat16: uint16 bits)."""
    return np.dtype(np.uint16 if dtype == "bfloat16" else dtype)


def bfloat16_view(out: np.ndarray):
    """torch's bfloat16 view of uint16 bits, no copy."""
    import torch

    return torch.from_numpy(out).view(torch.bfloat16)


def hand_back(work: kinds.Workload, spec: Any, x: tuple) -> Callable[[np.ndarray], Any]:
    """How a roof's host buffer is handed back: as it is (a forward's or an apply's shape), or
    as the workload's parts; bfloat16 as torch's view of its uint16 bits, torch imported here in
    setup so that the first call does not pay for the import."""
    result = (lambda out: out) if x else as_result(work)
    if spec.dtype != "bfloat16":
        return result
    started_torch()   # imported and its threads started here; bfloat16_view's import is then a lookup

    return lambda out: result(bfloat16_view(out))


def recycled(write_into: Callable[..., Callable[[np.ndarray], Any]]):
    """A roof that writes into memory let go by the previous call (harness.util.recycle): the limit
    without page faults, which malloc gives every allocation below 32 MiB anyway and
    RecycledBuffers gives at any size. `write_into(spec[, x])` runs untimed and returns the
    write of one output into a given buffer (bfloat16: its uint16 bits, viewed as torch's
    bfloat16 on the way out, as the half-precision Numba kernels hand theirs back). Returns
    the roof for a workload: `recycled(write)(work)` is its factory."""

    def of(work: kinds.Workload):
        def build(spec: Any, *x: np.ndarray):
            shape = x[0].shape if x else output_shape(work, spec)
            write, buffers = write_into(spec, *x), RecycledBuffers(shape, host_dtype(spec.dtype))
            result = hand_back(work, spec, x)

            def call():
                out = buffers.take()
                write(out)
                return result(out)

            return call

        build.__doc__ = write_into.__doc__
        return build

    return of


def fresh(write_into: Callable[..., Callable[[np.ndarray], Any]], touch: bool = False):
    """The same write into fresh memory every call: `np.empty` (NumPy asks for huge pages), of
    the host dtype (bfloat16: uint16 bits handed back as torch's bfloat16 view), as the Numba
    kernels allocate theirs: an allocate-and-fill of the same bytes, the yardstick of a one-off
    build (a first call). `touch`: its pages faulted in by this thread first (`first_touch`),
    then the threaded write: one more allocate-and-fill, the fastest of which is the yardstick
    (the kernels' own threads fault theirs). Above glibc's mmap threshold (32 MiB) every call
    gets fresh pages; below it malloc recycles, as it does for every implementation, except in
    the roofs step's first calls (harness.util.heap)."""

    def of(work: kinds.Workload):
        def build(spec: Any, *x: np.ndarray):
            shape, host = x[0].shape if x else output_shape(work, spec), host_dtype(spec.dtype)
            write = write_into(spec, *x)
            result = hand_back(work, spec, x)

            def call():
                out = np.empty(shape, host)
                write(first_touch(out) if touch else out)
                return result(out)

            return call

        build.__doc__ = ("np.empty, " + ("faulted in by one thread, " if touch else "")
                         + "then " + (write_into.__doc__ or "").replace(" into recycled memory", ""))
        return build

    return of
