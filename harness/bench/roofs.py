"""The memory roof: the cheapest possible way to produce each cell's output, timed alongside.

No table builder can beat allocating its output and writing every element once,
so every `table` cell is also timed as `empty + fill` of the same shape and
dtype, and every `forward` cell as the bare `x + pe` of the same arrays (the
table already built): once into fresh memory and once into memory the previous
call let go (see `_recycled`); `roof_ratio` divides by the fastest. Roofs live
in their own registry (`ROOF_REGISTRY`): they are bench's yardstick, not
implementations users choose between, and never run in verify.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from harness.core.registry import Implementation, Registry
from harness.core.spec import Spec
from harness.core.supports import Supports
from harness.util.memory import first_touch
from harness.util.recycle import RecycledBuffers

ROOF_REGISTRY = Registry()
NUMPY_DTYPES = Supports(dtypes=("float16", "float32", "float64"))
TORCH_DTYPES = Supports(dtypes=("float16", "bfloat16", "float32", "float64"))


@ROOF_REGISTRY.register(name="roof-numpy-fill", backend="numpy", supports=NUMPY_DTYPES)
def numpy_fill(spec: Spec):
    """np.empty + fill: allocate the table and write each element once."""
    shape, dtype = (spec.length, spec.d_model), np.dtype(spec.dtype)

    def fill():
        out = np.empty(shape, dtype)
        out.fill(1.0)
        return out

    return fill


@ROOF_REGISTRY.register(name="roof-numpy-torch-fill", backend="torch", supports=NUMPY_DTYPES)
def numpy_torch_fill(spec: Spec):
    """np.empty (huge pages) faulted in by one thread, then torch's multi-threaded fill_:
    the allocate-and-fill limit at several threads, where a one-thread fill is no bound."""
    import torch

    shape, dtype = (spec.length, spec.d_model), np.dtype(spec.dtype)

    def fill():
        out = first_touch(np.empty(shape, dtype))
        torch.from_numpy(out).fill_(1.0)
        return out

    return fill


@ROOF_REGISTRY.register(name="roof-numpy-add", backend="numpy", workload="forward",
                        supports=NUMPY_DTYPES)
def numpy_add(spec: Spec, x: np.ndarray):
    """x + pe with pe already built: what any forward implementation must at least do."""
    pe = np.ones((spec.length, spec.d_model), x.dtype)
    return lambda: x + pe


def _torch_fill(device: str):
    def build(spec: Spec):
        import torch

        dtype, shape = getattr(torch, spec.dtype), (spec.length, spec.d_model)
        return lambda: torch.empty(shape, dtype=dtype, device=device).fill_(1.0)

    build.__doc__ = f"torch.empty(..., device={device!r}).fill_(1.0)"
    return build


def _torch_forward(device: str, operation: str):
    """x + pe (two reads, one write) or a copy of x (one read, one write) on `device`."""

    def build(spec: Spec, x: np.ndarray):
        import torch

        xt = torch.from_numpy(x).to(device=device, dtype=getattr(torch, spec.dtype))
        pe = torch.ones((spec.length, spec.d_model), dtype=xt.dtype, device=device)

        @torch.no_grad()
        def add():
            return xt + pe

        @torch.no_grad()
        def copy():
            return torch.empty_like(xt).copy_(xt)

        return add if operation == "add" else copy

    build.__doc__ = (f"x + pe as torch tensors on {device!r}, pe already built" if operation == "add"
                     else f"a copy of x on {device!r}: one read and one write of the output's bytes")
    return build


def _register_torch_roofs() -> None:
    for device in ("cpu", "cuda"):
        suffix = "" if device == "cpu" else "-cuda"
        ROOF_REGISTRY.register(name=f"roof-torch{suffix}-fill", backend="torch", device=device,
                               supports=TORCH_DTYPES)(_torch_fill(device))
        ROOF_REGISTRY.register(name=f"roof-torch{suffix}-add", backend="torch", device=device,
                               workload="forward", supports=TORCH_DTYPES)(_torch_forward(device, "add"))
    ROOF_REGISTRY.register(name="roof-torch-cuda-copy", backend="torch", device="cuda",
                           workload="forward", supports=TORCH_DTYPES)(_torch_forward("cuda", "copy"))


_register_torch_roofs()


def _recycled(write_into: Callable[..., Callable[[np.ndarray], Any]]):
    """A roof that writes into memory let go by the previous call (harness.util.recycle): the limit
    without page faults, which malloc gives every allocation below 32 MiB anyway and
    RecycledBuffers gives at any size. `write_into(spec[, x])` runs untimed and returns the
    write of one output into a given buffer."""

    def build(spec: Spec, *x: np.ndarray):
        shape = x[0].shape if x else (spec.length, spec.d_model)
        write, buffers = write_into(spec, *x), RecycledBuffers(shape, spec.dtype)

        def call():
            out = buffers.take()
            write(out)
            return out

        return call

    build.__doc__ = write_into.__doc__
    return build


def _fill_numpy(spec: Spec):
    """fill into recycled memory (NumPy, one thread)"""
    return lambda out: out.fill(1.0)


def _fill_torch(spec: Spec):
    """fill into recycled memory (torch's multi-threaded fill_)"""
    import torch

    return lambda out: torch.from_numpy(out).fill_(1.0)


def _add_numpy(spec: Spec, x: np.ndarray):
    """x + pe into recycled memory (NumPy); TensorFlow's caching allocator recycles like this"""
    pe = np.ones((spec.length, spec.d_model), x.dtype)
    return lambda out: np.add(x, pe, out=out)


def _add_torch(spec: Spec, x: np.ndarray):
    """x + pe into recycled memory (torch's multi-threaded add)"""
    import torch

    xt, pe = torch.from_numpy(x), torch.ones((spec.length, spec.d_model), dtype=getattr(torch, spec.dtype))
    return lambda out: torch.add(xt, pe, out=torch.from_numpy(out))


for _name, _backend, _workload, _write in (
        ("roof-recycled-fill", "numpy", "table", _fill_numpy),
        ("roof-recycled-torch-fill", "torch", "table", _fill_torch),
        ("roof-recycled-add", "numpy", "forward", _add_numpy),
        ("roof-recycled-torch-add", "torch", "forward", _add_torch)):
    ROOF_REGISTRY.register(name=_name, backend=_backend, workload=_workload,
                           supports=NUMPY_DTYPES)(_recycled(_write))


def roofs_for(workload: str, device: str) -> Iterable[Implementation]:
    """The available roofs that can stand beside cells of this workload on this device."""
    return [r for r in ROOF_REGISTRY.all() if r.workload == workload and r.device == device
            and r.available]
