"""torch-angleadd, torch-compile and their CUDA twins: long positions, slab edges, shapes, no-GPU skip."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, reference
from harness.core.checks import check
from harness.core.registry import REGISTRY
from harness.impls import fast_torch  # noqa: F401  (registers)
from harness.impls.fast_torch import BLOCK, SLAB_BLOCKS

torch = pytest.importorskip("torch")

LONG = Spec(262_144, 8)
CUDA = ["torch-cuda-angleadd", "torch-cuda-compile"]


def _long_error(name: str) -> float:
    out = REGISTRY.get(name).build(LONG)().cpu().numpy()
    return float(np.abs(out - reference(LONG)).max())


@pytest.mark.parametrize("name", ["torch-angleadd", "torch-compile"])
def test_long_positions_within_3e_7(name):
    assert _long_error(name) <= 3e-7


@pytest.mark.parametrize("length", [1, BLOCK + 1, BLOCK * SLAB_BLOCKS + 1, BLOCK * SLAB_BLOCKS * 2 + 7])
def test_slab_edges(length):
    spec = Spec(length, 6, cos_first=True, offset=2)
    assert check(REGISTRY.get("torch-angleadd"), spec).status == "pass"


def test_compile_reuses_one_graph_across_shapes():
    """dynamic=True: new shapes reuse the compiled graph instead of hitting the recompile limit."""
    for spec in (Spec(100, 16), Spec(300, 24), Spec(700, 40, layout="concat"), Spec(1000, 64),
                 Spec(65, 10, dtype="float64")):
        assert check(REGISTRY.get("torch-compile"), spec).status == "pass", spec.short()


@pytest.mark.parametrize("name", CUDA)
def test_cuda_without_gpu_is_unavailable_with_a_reason(name):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: see test_cuda")
    impl = REGISTRY.get(name)
    assert "CUDA" in impl.unavailable_reason()
    assert check(impl, Spec(10, 4)).status == "skip"


@pytest.mark.gpu
@pytest.mark.parametrize("name", CUDA)
def test_cuda(name):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    assert _long_error(name) <= 3e-7
    assert check(REGISTRY.get(name), Spec(300, 33, odd="pad", layout="concat")).status == "pass"
