"""The memory roof: the cheapest possible way to produce each cell's output, timed alongside.

No table builder can beat allocating its output and writing every element once,
so every cell of a workload without inputs (a 1-D `table`, a rotary `cache`, a
`grid`, a `timestep` embedding) is also timed as `empty + fill` of the same
bytes and dtype, every `forward` cell as the bare `x + pe` of the same arrays
(the table already built), and every rotary `apply` as a bare read-modify-write
pass over q and k (`_scale_pass`, `_scale_recycled`): once into fresh memory and
once into memory the previous call let go (see `_recycled`); `roof_ratio`
divides by the fastest. Roofs live in their own registry (`ROOF_REGISTRY`):
they are bench's yardstick, not implementations users choose between, and never
run in verify. A 1-D table's roofs keep their short names; another workload's
end in its name (`roof-numpy-fill-cache`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

import numpy as np

from harness.core import kinds
from harness.core.registry import Implementation, Registry
from harness.core.kinds.rotary.forms import QK_LAYOUTS, ApplyForms
from harness.core.kinds.table.spec import Spec
from harness.runs.results import COMPUTE_ROOF
from harness.util.memory import first_touch
from harness.util.recycle import RecycledBuffers

ROOF_REGISTRY = Registry()


def dtypes(*allowed: str) -> Callable[[Any], Optional[str]]:
    """A roof's supports: any spec of any kind in one of `allowed` dtypes."""
    def supports(spec: Any) -> Optional[str]:
        return None if spec.dtype in allowed else f"dtype {spec.dtype} not supported"
    return supports


NUMPY_DTYPES = dtypes("float16", "float32", "float64")
TORCH_DTYPES = dtypes("float16", "bfloat16", "float32", "float64")


def _filled(spec: Any) -> kinds.Workload:
    (work,) = [w for w in kinds.of(spec).workloads if w.inputs is None]
    return work


def output_shape(spec: Any) -> tuple[int, ...]:
    """What one call of a workload without inputs writes (parts stacked): the same bytes."""
    return _filled(spec).shape(spec, 1, 1)


def as_result(spec: Any) -> Callable[[Any], Any]:
    """How one allocation is handed back as the workload's result: the array, or a view per part
    (a rotary cache's cos and sin), which is what bench's result checks expect. Decided in
    setup, so the timed call pays nothing for it."""
    if _filled(spec).parts:
        return tuple
    return lambda out: out


def fill_workloads() -> list[str]:
    """Every kind's workloads without inputs: a bare fill is their roof."""
    return [w.name for kind in kinds.KINDS.values() for w in kind.workloads if w.inputs is None]


def roof_name(stem: str, workload: str) -> str:
    # the 1-D table's roofs kept their first names (committed runs hold them)
    return stem if workload in ("table", "forward") else f"{stem}-{workload}"


def numpy_fill(spec: Spec):
    """np.empty + fill: allocate the table and write each element once."""
    shape, dtype, result = output_shape(spec), np.dtype(spec.dtype), as_result(spec)

    def fill():
        out = np.empty(shape, dtype)
        out.fill(1.0)
        return result(out)

    return fill


def numpy_torch_fill(spec: Spec):
    """np.empty (huge pages) faulted in by one thread, then torch's multi-threaded fill_:
    the allocate-and-fill limit at several threads, where a one-thread fill is no bound."""
    import torch

    shape, dtype, result = output_shape(spec), np.dtype(spec.dtype), as_result(spec)

    def fill():
        out = first_touch(np.empty(shape, dtype))
        torch.from_numpy(out).fill_(1.0)
        return result(out)

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

        dtype, shape, result = getattr(torch, spec.dtype), output_shape(spec), as_result(spec)
        return lambda: result(torch.empty(shape, dtype=dtype, device=device).fill_(1.0))

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
        for workload in fill_workloads():
            ROOF_REGISTRY.register(name=roof_name(f"roof-torch{suffix}-fill", workload), backend="torch",
                                   device=device, workload=workload,
                                   supports=TORCH_DTYPES)(_torch_fill(device))
        ROOF_REGISTRY.register(name=f"roof-torch{suffix}-add", backend="torch", device=device,
                               workload="forward", supports=TORCH_DTYPES)(_torch_forward(device, "add"))
    ROOF_REGISTRY.register(name="roof-torch-cuda-copy", backend="torch", device="cuda",
                           workload="forward", supports=TORCH_DTYPES)(_torch_forward("cuda", "copy"))


_register_torch_roofs()


#: NumPy has no bfloat16: a recycled roof keeps its bits in uint16 and hands back a torch view.
BFLOAT16_ONE = 0x3F80


def host_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a host buffer holding `dtype`'s bytes (bfloat16: uint16 bits)."""
    return np.dtype(np.uint16 if dtype == "bfloat16" else dtype)


def _bfloat16(out: np.ndarray):
    import torch

    return torch.from_numpy(out).view(torch.bfloat16)


def _recycled(write_into: Callable[..., Callable[[np.ndarray], Any]]):
    """A roof that writes into memory let go by the previous call (harness.util.recycle): the limit
    without page faults, which malloc gives every allocation below 32 MiB anyway and
    RecycledBuffers gives at any size. `write_into(spec[, x])` runs untimed and returns the
    write of one output into a given buffer (bfloat16: its uint16 bits, viewed as torch's
    bfloat16 on the way out, as the half-precision Numba kernels hand theirs back)."""

    def build(spec: Spec, *x: np.ndarray):
        shape = x[0].shape if x else output_shape(spec)
        write, buffers = write_into(spec, *x), RecycledBuffers(shape, host_dtype(spec.dtype))
        result = (lambda out: out) if x else as_result(spec)
        if spec.dtype == "bfloat16":
            parts = result
            result = lambda out: parts(_bfloat16(out))   # noqa: E731

        def call():
            out = buffers.take()
            write(out)
            return result(out)

        return call

    build.__doc__ = write_into.__doc__
    return build


def _fill_numpy(spec: Spec):
    """fill into recycled memory (NumPy, one thread)"""
    one = BFLOAT16_ONE if spec.dtype == "bfloat16" else 1.0
    return lambda out: out.fill(one)


def _fill_torch(spec: Spec):
    """fill into recycled memory (torch's multi-threaded fill_)"""
    import torch

    if spec.dtype == "bfloat16":
        return lambda out: _bfloat16(out).fill_(1.0)
    return lambda out: torch.from_numpy(out).fill_(1.0)


def _add_numpy(spec: Spec, x: np.ndarray):
    """x + pe into recycled memory (NumPy); TensorFlow's caching allocator recycles like this"""
    pe = np.ones((spec.length, spec.d_model), x.dtype)
    return lambda out: np.add(x, pe, out=out)


def _add_torch(spec: Spec, x: np.ndarray):
    """x + pe into recycled memory (torch's multi-threaded add)"""
    import torch

    dtype = getattr(torch, spec.dtype)
    xt, pe = torch.from_numpy(x).to(dtype), torch.ones((spec.length, spec.d_model), dtype=dtype)
    view = _bfloat16 if spec.dtype == "bfloat16" else torch.from_numpy
    return lambda out: torch.add(xt, pe, out=view(out))


def _register_host_roofs() -> None:
    for workload in fill_workloads():
        for stem, backend, build in (("roof-numpy-fill", "numpy", numpy_fill),
                                     ("roof-numpy-torch-fill", "torch", numpy_torch_fill),
                                     ("roof-recycled-fill", "numpy", _recycled(_fill_numpy)),
                                     ("roof-recycled-torch-fill", "torch", _recycled(_fill_torch))):
            supports = NUMPY_DTYPES if stem.startswith("roof-numpy") else TORCH_DTYPES
            ROOF_REGISTRY.register(name=roof_name(stem, workload), backend=backend, workload=workload,
                                   supports=supports)(build)
    for name, backend, write, supports in (("roof-recycled-add", "numpy", _add_numpy, NUMPY_DTYPES),
                                           ("roof-recycled-torch-add", "torch", _add_torch, TORCH_DTYPES)):
        ROOF_REGISTRY.register(name=name, backend=backend, workload="forward",
                               supports=supports)(_recycled(write))


_register_host_roofs()


def _scale_pass(device: str):
    """A rotary apply's roof: q * 2 and k * 2 into fresh arrays, one read and one write of each
    element, which any rotation must at least do (on `device`; "numpy" for NumPy)."""

    def build(spec: Any, q: np.ndarray, k: np.ndarray, positions: np.ndarray):
        if device == "numpy":
            qn, kn = q.astype(spec.dtype), k.astype(spec.dtype)
            return lambda: (np.multiply(qn, 2), np.multiply(kn, 2))
        import torch

        dtype = getattr(torch, spec.dtype)
        qt, kt = (torch.from_numpy(a).to(device=device, dtype=dtype) for a in (q, k))

        @torch.no_grad()
        def scale():
            return qt.mul(2), kt.mul(2)

        return scale

    build.__doc__ = f"q * 2 and k * 2 into fresh arrays ({device}): read and write every element once"
    return build


def _scale_recycled(threaded: bool):
    """The same pass into memory the previous call let go (harness.util.recycle): the limit
    without page faults, beside which an apply writing into recycled memory is judged."""

    def build(spec: Any, q: np.ndarray, k: np.ndarray, positions: np.ndarray):
        buffers = RecycledBuffers((2, *q.shape), host_dtype(spec.dtype))
        if threaded:   # every dtype: bfloat16 as torch's view of the uint16 bits
            import torch

            dtype = getattr(torch, spec.dtype)
            qt, kt = (torch.from_numpy(a).to(dtype) for a in (q, k))
            view = _bfloat16 if spec.dtype == "bfloat16" else torch.from_numpy

            def write(out: np.ndarray) -> tuple:
                return torch.mul(qt, 2, out=view(out[0])), torch.mul(kt, 2, out=view(out[1]))
        else:
            qn, kn = q.astype(spec.dtype), k.astype(spec.dtype)

            def write(out: np.ndarray) -> tuple:
                return np.multiply(qn, 2, out=out[0]), np.multiply(kn, 2, out=out[1])

        def call():
            return write(buffers.take())

        return call

    build.__doc__ = (f"q * 2 and k * 2 into recycled memory ({'torch, threaded' if threaded else 'NumPy'})")
    return build


def _device_copy(spec: Any, q: np.ndarray, k: np.ndarray, positions: np.ndarray):
    """q and k copied on the device into fresh tensors: the copy of the same bytes a rotation
    reads and writes, the yardstick a GPU kernel is set against (in place or not)."""
    import torch

    dtype = getattr(torch, spec.dtype)
    qt, kt = (torch.from_numpy(np.ascontiguousarray(a)).to(device="cuda", dtype=dtype) for a in (q, k))
    return lambda: (qt.clone(), kt.clone())


#: The apply forms a pass over q and k takes: any layout and position ids (it reads neither),
#: any k head count when q and k are passed over apart; the recycled passes write both into one
#: buffer, so there k has q's heads.
EVERY_FORM = ApplyForms(layouts=QK_LAYOUTS, gqa=True, batch_positions=True)
SAME_HEADS = ApplyForms(layouts=QK_LAYOUTS, batch_positions=True)


def _register_apply_roofs() -> None:
    for name, backend, device, where, supports in (
            ("roof-numpy-scale-apply", "numpy", "cpu", "numpy", NUMPY_DTYPES),
            ("roof-torch-scale-apply", "torch", "cpu", "cpu", TORCH_DTYPES),
            ("roof-torch-cuda-scale-apply", "torch", "cuda", "cuda", TORCH_DTYPES)):
        ROOF_REGISTRY.register(name=name, backend=backend, device=device, workload="apply",
                               supports=supports, forms=EVERY_FORM)(_scale_pass(where))
    ROOF_REGISTRY.register(name="roof-torch-cuda-copy-apply", backend="torch", device="cuda",
                           workload="apply", supports=TORCH_DTYPES, forms=EVERY_FORM)(_device_copy)
    for name, backend, threaded, supports in (
            ("roof-recycled-scale-apply", "numpy", False, NUMPY_DTYPES),
            ("roof-recycled-torch-scale-apply", "torch", True, TORCH_DTYPES)):
        ROOF_REGISTRY.register(name=name, backend=backend, workload="apply", supports=supports,
                               forms=SAME_HEADS)(_scale_recycled(threaded))


_register_apply_roofs()


def _sincos(functions: str):
    """A compute-bound workload's roof (its `angles`): one float32 sin and one cos of each angle
    through vector math (`functions`: NumPy's SIMD loops, or torch's threaded ones) into
    recycled memory, contiguous. A half-precision output gets them through a float32 scratch
    and one rounding by torch's threaded copy (NumPy's float32-to-float16 cast is scalar here:
    it took 5x the sines themselves)."""

    def write_into(spec: Any):
        work = [w for w in kinds.of(spec).workloads if w.angles is not None][0]
        angles = np.ascontiguousarray(work.angles(spec), dtype=np.float32).reshape(-1)
        n = angles.size
        scratch = None if spec.dtype == "float32" else np.empty(2 * n, np.float32)
        wrap, sin, cos, view, source = (lambda a: a), np.sin, np.cos, None, None
        if functions == "torch" or scratch is not None:
            import torch

            view = _bfloat16 if spec.dtype == "bfloat16" else torch.from_numpy
            source = None if scratch is None else torch.from_numpy(scratch)
            if functions == "torch":
                wrap, sin, cos = torch.from_numpy, torch.sin, torch.cos
        given = wrap(angles)

        def write(out: np.ndarray) -> None:
            flat = out.reshape(-1)
            into = flat[:2 * n] if scratch is None else scratch
            sin(given, out=wrap(into[:n]))
            cos(given, out=wrap(into[n:]))
            if scratch is not None:
                view(flat[:2 * n]).copy_(source)
            flat[2 * n:] = 0   # an odd width's zero column: as many elements

        return write

    write_into.__doc__ = (f"float32 sin and cos of the workload's angles ({functions}) into recycled "
                          "memory: the compute roof")
    return _recycled(write_into)


def _register_compute_roofs() -> None:
    for kind in kinds.KINDS.values():
        for work in kind.workloads:
            if work.angles is None:
                continue
            for stem, functions, supports in ((COMPUTE_ROOF, "numpy", dtypes("float32")),
                                              (f"{COMPUTE_ROOF}-numpy", "numpy", dtypes("float16", "bfloat16")),
                                              (f"{COMPUTE_ROOF}-torch", "torch", TORCH_DTYPES)):
                ROOF_REGISTRY.register(name=roof_name(stem, work.name), backend="torch" if stem != COMPUTE_ROOF else "numpy",
                                       workload=work.name, supports=supports)(_sincos(functions))


_register_compute_roofs()


def roofs_for(workload: str, device: str) -> Iterable[Implementation]:
    """The available roofs that can stand beside cells of this workload on this device."""
    return [r for r in ROOF_REGISTRY.all() if r.workload == workload and r.device == device
            and r.available]
