"""The roofs: the cheapest possible way to produce each cell's output, timed alongside.

Each workload says what one call reads and writes (`Workload.traffic`), and that says which roof
measures it: one that only writes its output (a 1-D `table`, a rotary `cache`, a `grid`, a
`timestep` embedding) is also timed as `empty + fill` of the same bytes and dtype (and, past
the last-level cache, as a fill by streaming stores: harness.bench.roof_stream), one that adds
a table to its input (`forward`) as the bare `x + pe` of the same arrays (the table already
built), one that reads its inputs and writes them back (a rotary `apply`) as a bare
read-modify-write pass over them (`_scale_pass`, `_scale_recycled`): once into fresh memory and
once into memory the previous call let go (harness.bench.roof_memory: `recycled`); `roof_ratio`
divides by the fastest. The fresh ones are also a first call's yardstick (the report's roof
table): `fresh` writes into `np.empty` memory in every dtype, as the Numba kernels allocate
theirs. A workload
that declares its `angles` also gets a compute roof (`_sincos`). Roofs live in their own
registry (`ROOF_REGISTRY`): they are bench's yardstick, not implementations users choose
between, and never run in verify. A roof's name ends in its workload's `roof_ending`
(`roof-numpy-fill-cache`; the 1-D table's kept their short names).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

from harness.core import kinds
from harness.core.record import ITEMSIZE
from harness.core.registry import Implementation, Registry
from harness.runs.results import COMPUTE_ROOF
from harness.bench.roof_memory import (BFLOAT16_ONE, as_result, bfloat16_view, fresh, host_dtype,
                                       output_shape, recycled, started_torch)
from harness.bench.roof_stream import streaming_fill
from harness.util.recycle import RecycledBuffers

ROOF_REGISTRY = Registry()


def dtypes(*allowed: str) -> Callable[[Any], Optional[str]]:
    """A roof's supports: any spec of any kind in one of `allowed` dtypes."""
    def supports(spec: Any) -> Optional[str]:
        return None if spec.dtype in allowed else f"dtype {spec.dtype} not supported"
    return supports


NUMPY_DTYPES = dtypes("float16", "float32", "float64")
TORCH_DTYPES = dtypes("float16", "bfloat16", "float32", "float64")
#: Streaming stores pay past the last-level cache only; below this a cached fill is the faster.
STREAM_FROM_BYTES = 8 << 20


def streamed_outputs(spec: Any) -> Optional[str]:
    """The streaming fill's supports: outputs of STREAM_FROM_BYTES or more, in any dtype."""
    why = TORCH_DTYPES(spec)
    if why or spec.elements * ITEMSIZE[spec.dtype] >= STREAM_FROM_BYTES:
        return why
    return f"an output under {STREAM_FROM_BYTES >> 20} MiB (a cached fill is faster there)"


def numpy_add(spec: Any, x: np.ndarray):
    """x + pe with pe already built: what any forward implementation must at least do."""
    pe = np.ones(x.shape[1:], x.dtype)
    return lambda: x + pe


def _torch_fill(device: str):
    def fills(work: kinds.Workload):
        def build(spec: Any):
            torch = started_torch()

            dtype, shape, result = getattr(torch, spec.dtype), output_shape(work, spec), as_result(work)
            return lambda: result(torch.empty(shape, dtype=dtype, device=device).fill_(1.0))

        build.__doc__ = f"torch.empty(..., device={device!r}).fill_(1.0)"
        return build

    return fills


def _torch_forward(device: str, operation: str):
    """x + pe (two reads, one write) or a copy of x (one read, one write) on `device`."""

    def build(spec: Any, x: np.ndarray):
        torch = started_torch()

        xt = torch.from_numpy(x).to(device=device, dtype=getattr(torch, spec.dtype))
        pe = torch.ones(x.shape[1:], dtype=xt.dtype, device=device)

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


def _fill_numpy(spec: Any):
    """fill into recycled memory (NumPy, one thread)"""
    one = BFLOAT16_ONE if spec.dtype == "bfloat16" else 1.0
    return lambda out: out.fill(one)


def _fill_torch(spec: Any):
    """fill into recycled memory (torch's multi-threaded fill_)"""
    torch = started_torch()

    if spec.dtype == "bfloat16":
        return lambda out: bfloat16_view(out).fill_(1.0)
    return lambda out: torch.from_numpy(out).fill_(1.0)


def _add_numpy(spec: Any, x: np.ndarray):
    """x + pe into recycled memory (NumPy); TensorFlow's caching allocator recycles like this"""
    pe = np.ones(x.shape[1:], x.dtype)
    return lambda out: np.add(x, pe, out=out)


def _add_torch(spec: Any, x: np.ndarray):
    """x + pe into recycled memory (torch's multi-threaded add)"""
    torch = started_torch()

    dtype = getattr(torch, spec.dtype)
    xt, pe = torch.from_numpy(x).to(dtype), torch.ones(x.shape[1:], dtype=dtype)
    view = bfloat16_view if spec.dtype == "bfloat16" else torch.from_numpy
    return lambda out: torch.add(xt, pe, out=view(out))


def _passed(inputs: tuple) -> list[np.ndarray]:
    """The inputs a pass reads and writes back: its floating arrays (a rotary apply's q and k;
    not its integer positions)."""
    return [a for a in inputs if np.asarray(a).dtype.kind == "f"]


def _scale_pass(device: str):
    """A pass over the inputs (a rotary apply's q and k): each * 2 into fresh arrays, one read
    and one write of each element, which any rotation must at least do (on `device`; "numpy"
    for NumPy)."""

    def build(spec: Any, *inputs: np.ndarray):
        if device == "numpy":
            arrays = [a.astype(spec.dtype) for a in _passed(inputs)]
            return lambda: tuple(np.multiply(a, 2) for a in arrays)
        torch = started_torch()

        dtype = getattr(torch, spec.dtype)
        tensors = [torch.from_numpy(a).to(device=device, dtype=dtype) for a in _passed(inputs)]

        @torch.no_grad()
        def scale():
            return tuple(t.mul(2) for t in tensors)

        return scale

    build.__doc__ = f"q * 2 and k * 2 into fresh arrays ({device}): read and write every element once"
    return build


def _scale_recycled(threaded: bool):
    """The same pass into memory the previous call let go (harness.util.recycle): the limit
    without page faults, beside which an apply writing into recycled memory is judged. One
    buffer holds every input, so they must have one shape (k with q's heads)."""

    def build(spec: Any, *inputs: np.ndarray):
        given = _passed(inputs)
        buffers = RecycledBuffers((len(given), *given[0].shape), host_dtype(spec.dtype))
        if threaded:   # every dtype: bfloat16 as torch's view of the uint16 bits
            torch = started_torch()

            dtype = getattr(torch, spec.dtype)
            tensors = [torch.from_numpy(a).to(dtype) for a in given]
            view = bfloat16_view if spec.dtype == "bfloat16" else torch.from_numpy

            def write(out: np.ndarray) -> tuple:
                return tuple(torch.mul(t, 2, out=view(o)) for t, o in zip(tensors, out))
        else:
            arrays = [a.astype(spec.dtype) for a in given]

            def write(out: np.ndarray) -> tuple:
                return tuple(np.multiply(a, 2, out=o) for a, o in zip(arrays, out))

        def call():
            return write(buffers.take())

        return call

    build.__doc__ = (f"q * 2 and k * 2 into recycled memory ({'torch, threaded' if threaded else 'NumPy'})")
    return build


def _scale_numpy_torch(spec: Any, *inputs: np.ndarray):
    """q * 2 and k * 2 by torch's threaded mul into fresh `np.empty` arrays (huge pages; bfloat16
    as uint16 bits), the memory the Numba kernels hand back: an apply's first-call yardstick"""
    torch = started_torch()

    dtype, host = getattr(torch, spec.dtype), host_dtype(spec.dtype)
    given = _passed(inputs)
    tensors = [torch.from_numpy(a).to(dtype) for a in given]
    view = bfloat16_view if spec.dtype == "bfloat16" else torch.from_numpy

    @torch.no_grad()
    def scale():
        return tuple(torch.mul(t, 2, out=view(np.empty(a.shape, host))) for t, a in zip(tensors, given))

    return scale


def _device_copy(spec: Any, *inputs: np.ndarray):
    """q and k copied on the device into fresh tensors: the copy of the same bytes a rotation
    reads and writes, the yardstick a GPU kernel is set against (in place or not)."""
    torch = started_torch()

    dtype = getattr(torch, spec.dtype)
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).to(device="cuda", dtype=dtype)
               for a in _passed(inputs)]
    return lambda: tuple(t.clone() for t in tensors)


def _sincos(functions: str):
    """A compute-bound workload's roof (its `angles`): one float32 sin and one cos of each angle
    through vector math (`functions`: NumPy's SIMD loops, or torch's threaded ones) into
    recycled memory, contiguous. A half-precision output gets them through a float32 scratch
    and one rounding by torch's threaded copy (NumPy's float32-to-float16 cast is scalar here:
    it took 5x the sines themselves)."""

    def of(work: kinds.Workload):
        def write_into(spec: Any):
            angles = np.ascontiguousarray(work.angles(spec), dtype=np.float32).reshape(-1)
            n = angles.size
            scratch = None if spec.dtype == "float32" else np.empty(2 * n, np.float32)
            wrap, sin, cos, view, source = (lambda a: a), np.sin, np.cos, None, None
            if functions == "torch" or scratch is not None:
                torch = started_torch()

                view = bfloat16_view if spec.dtype == "bfloat16" else torch.from_numpy
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

        write_into.__doc__ = (f"float32 sin and cos of the workload's angles ({functions}) into "
                              "recycled memory: the compute roof")
        return recycled(write_into)(work)

    return of


def _same(build: Callable) -> Callable[[kinds.Workload], Callable]:
    """A roof factory that reads what it needs from its inputs, the same for every workload."""
    return lambda work: build


#: A roof: (the stem of its name, backend, device, the factory for a workload, dtypes, whether
#: it declares every form of the workload's inputs (None: no forms; False: k with q's heads only))
Roof = tuple[str, str, str, Callable[[kinds.Workload], Callable], Callable, Optional[bool]]

#: Which roofs measure each kind of traffic (harness.core.kinds: what one call reads and writes).
ROOFS: dict[str, tuple[Roof, ...]] = {
    kinds.WRITES: (
        ("roof-torch-fill", "torch", "cpu", _torch_fill("cpu"), TORCH_DTYPES, None),
        ("roof-torch-cuda-fill", "torch", "cuda", _torch_fill("cuda"), TORCH_DTYPES, None),
        # np.empty has no bfloat16: these fills hold its bits in uint16, as the Numba kernels do
        ("roof-numpy-fill", "numpy", "cpu", fresh(_fill_numpy), TORCH_DTYPES, None),
        ("roof-numpy-torch-fill", "torch", "cpu", fresh(_fill_torch, touch=True), TORCH_DTYPES, None),
        ("roof-recycled-fill", "numpy", "cpu", recycled(_fill_numpy), TORCH_DTYPES, None),
        ("roof-recycled-torch-fill", "torch", "cpu", recycled(_fill_torch), TORCH_DTYPES, None),
        # streaming stores skip the read for ownership: the fastest bare write of a large output
        ("roof-stream-fill", "numba", "cpu", fresh(streaming_fill), streamed_outputs, None),
        ("roof-recycled-stream-fill", "numba", "cpu", recycled(streaming_fill), streamed_outputs, None),
    ),
    kinds.ADDS: (
        ("roof-numpy-add", "numpy", "cpu", _same(numpy_add), NUMPY_DTYPES, None),
        ("roof-torch-add", "torch", "cpu", _same(_torch_forward("cpu", "add")), TORCH_DTYPES, None),
        ("roof-torch-cuda-add", "torch", "cuda", _same(_torch_forward("cuda", "add")), TORCH_DTYPES, None),
        ("roof-torch-cuda-copy", "torch", "cuda", _same(_torch_forward("cuda", "copy")), TORCH_DTYPES, None),
        ("roof-numpy-torch-add", "torch", "cpu", fresh(_add_torch), TORCH_DTYPES, None),
        ("roof-recycled-add", "numpy", "cpu", recycled(_add_numpy), NUMPY_DTYPES, None),
        ("roof-recycled-torch-add", "torch", "cpu", recycled(_add_torch), TORCH_DTYPES, None),
    ),
    kinds.PASSES: (
        ("roof-numpy-scale", "numpy", "cpu", _same(_scale_pass("numpy")), NUMPY_DTYPES, True),
        ("roof-torch-scale", "torch", "cpu", _same(_scale_pass("cpu")), TORCH_DTYPES, True),
        ("roof-torch-cuda-scale", "torch", "cuda", _same(_scale_pass("cuda")), TORCH_DTYPES, True),
        ("roof-numpy-torch-scale", "torch", "cpu", _same(_scale_numpy_torch), TORCH_DTYPES, True),
        ("roof-torch-cuda-copy", "torch", "cuda", _same(_device_copy), TORCH_DTYPES, True),
        # the recycled passes write q and k into one buffer: k with q's heads only
        ("roof-recycled-scale", "numpy", "cpu", _same(_scale_recycled(False)), NUMPY_DTYPES, False),
        ("roof-recycled-torch-scale", "torch", "cpu", _same(_scale_recycled(True)), TORCH_DTYPES, False),
    ),
}

#: A workload with `angles` is also measured by its sines and cosines (the compute roof).
COMPUTE_ROOFS: tuple[Roof, ...] = (
    (COMPUTE_ROOF, "numpy", "cpu", _sincos("numpy"), dtypes("float32"), None),
    (f"{COMPUTE_ROOF}-numpy", "torch", "cpu", _sincos("numpy"), dtypes("float16", "bfloat16"), None),
    (f"{COMPUTE_ROOF}-torch", "torch", "cpu", _sincos("torch"), TORCH_DTYPES, None),
)


def roofs_of(work: kinds.Workload) -> Iterator[Roof]:
    """The roofs that measure a workload: its traffic's, and with `angles` the compute roof."""
    yield from ROOFS[work.traffic]
    if work.angles is not None:
        yield from COMPUTE_ROOFS


#: Roofs a default sweep times at each workload's largest size only (`--full`: at every size).
#: The streaming fills pay past the last-level cache only, and the `numpy-torch` ones (fresh
#: `np.empty` memory) are the Roofs table's first-call yardstick, read there alone. In the quiet
#: default run 20261128-020855-64f8870 (in git history) no streaming fill was the fastest roof of its bound below
#: the largest size; a numpy-torch one was at 5 of 46 outputs, by 1.01-1.38x, where dropping
#: them all moves those roofs by as much. The other roofs stay: which of them is the fastest
#: changes from size to size.
LARGEST_ONLY_STEMS = ("roof-stream-fill", "roof-recycled-stream-fill", "roof-numpy-torch-fill",
                      "roof-numpy-torch-add", "roof-numpy-torch-scale")
#: The registered names of those roofs (each stem with each workload's `roof_ending`).
LARGEST_ONLY: set[str] = set()


def _register(work: kinds.Workload, kind: str) -> None:
    for stem, backend, device, factory, supports, every_form in roofs_of(work):
        forms = None if every_form is None or work.forms is None else work.forms.every(gqa=every_form)
        if stem in LARGEST_ONLY_STEMS:
            LARGEST_ONLY.add(stem + work.roof_ending)
        ROOF_REGISTRY.register(name=stem + work.roof_ending, backend=backend, device=device,
                               workload=work.name, kind=kind, supports=supports,
                               forms=forms)(factory(work))


for _kind in kinds.KINDS.values():
    for _work in _kind.workloads:
        _register(_work, _kind.name)


def roofs_for(workload: str, device: str) -> Iterable[Implementation]:
    """The available roofs that can stand beside cells of this workload on this device."""
    return [r for r in ROOF_REGISTRY.all() if r.workload == workload and r.device == device
            and r.available]
