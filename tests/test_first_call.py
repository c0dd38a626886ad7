"""First calls: the allocate-and-fill roofs they are set against (NumPy memory, every dtype, the
same bytes). How the Numba kernels allocate theirs: tests/test_fast_numba.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from harness.bench.roofs import ROOF_REGISTRY
from harness.core import kinds
from harness.core.record import ITEMSIZE

torch = pytest.importorskip("torch")

#: (roof, kind, what each output element must hold given the inputs)
FRESH = (("roof-numpy-fill", "table"), ("roof-numpy-torch-fill", "table"),
         ("roof-numpy-fill-cache", "rotary"), ("roof-numpy-torch-fill-grid", "grid"),
         ("roof-numpy-torch-add", "table"), ("roof-numpy-torch-scale-apply", "rotary"))
DTYPES = ("float32", "float64", "float16", "bfloat16")


def _values(out) -> list[np.ndarray]:
    parts = out if isinstance(out, tuple) else (out,)
    return [p.float().numpy() if isinstance(p, torch.Tensor) else np.asarray(p, np.float64)
            for p in parts]


@pytest.mark.parametrize("name,kind", FRESH)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fresh_roofs_write_the_workloads_bytes_into_new_memory(name, kind, dtype):
    roof = ROOF_REGISTRY.get(name)
    work = kinds.named(kind).workload(roof.workload)
    spec = kinds.named(kind).bench_spec(64, 64, dtype, kinds.named(kind).first_convention)
    assert roof.supports(spec) is None              # bfloat16 too: its bits in uint16
    args = work.arguments(spec, 2, 4)
    call = roof.build(spec, *args)
    out, again = call(), call()
    parts = out if isinstance(out, tuple) else (out,)
    held = [p.numpy().view(np.uint8) if isinstance(p, torch.Tensor) and p.dtype != torch.bfloat16
            else p.view(torch.uint8).numpy() if isinstance(p, torch.Tensor) else p.view(np.uint8)
            for p in parts]
    assert sum(h.nbytes for h in held) == work.elements(spec, 2, 4) * ITEMSIZE[dtype]
    assert all(str(p.dtype).endswith(dtype) for p in parts)
    inputs = [a for a in args if np.asarray(a).dtype.kind == "f"]
    want = [2 * np.asarray(a, np.float64) for a in inputs] if "scale" in name else \
        [np.asarray(inputs[0], np.float64) + 1] if "add" in name else [np.ones(1)] * len(parts)
    for got, expected in zip(_values(out), want):
        np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-2, atol=2e-2)
    again_parts = again if isinstance(again, tuple) else (again,)
    for p, q in zip(parts, again_parts):            # each call its own memory, both held
        a = p.data_ptr() if isinstance(p, torch.Tensor) else p.ctypes.data
        b = q.data_ptr() if isinstance(q, torch.Tensor) else q.ctypes.data
        assert a != b


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads counted in /proc")
def test_bfloat16_roofs_import_torch_in_setup_not_in_their_first_call():
    """A bfloat16 roof hands back torch's view of its uint16 bits: torch is imported when it is
    built, or the worker's first call of it pays the import (8 s, measured in a bench run); and
    torch's threads are started then too (a parallel fill starts no new thread afterwards)."""
    script = textwrap.dedent("""
        import os, sys
        from harness.bench.roofs import ROOF_REGISTRY
        from harness.core import kinds
        assert "torch" not in sys.modules, "the precondition: nothing imported torch yet"
        table = kinds.named("table")
        spec = table.bench_spec(64, 64, "bfloat16", table.first_convention)
        for name in ("roof-numpy-fill", "roof-recycled-fill"):
            ROOF_REGISTRY.get(name).build(spec)
        imported = "torch" in sys.modules
        threads = len(os.listdir("/proc/self/task"))
        sys.modules["torch"].empty(1 << 16).fill_(1.0)
        print(imported, len(os.listdir("/proc/self/task")) == threads)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
