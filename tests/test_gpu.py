"""On a GPU only (skipped with the reason elsewhere): the driver calls and graph captures are real."""

from __future__ import annotations

import numpy as np
import pytest

from harness import backends
from harness.backends import cuda_driver
from harness.core.convert import to_numpy

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cuda_driver.problem() is not None,
                                 reason=f"no GPU here: {cuda_driver.problem()}")]


def test_driver_reports_l2_and_flushes_it():
    facts = cuda_driver.device_facts()
    assert facts["l2_bytes"] > 0 and facts["dram_gbps_theoretical"] > 0
    flush = cuda_driver.l2_flush()
    assert flush.nbytes == 2 * facts["l2_bytes"]
    flush()
    cuda_driver.synchronize()


@pytest.mark.parametrize("name", ["torch", "cupy"])
def test_graph_replay_returns_what_the_call_computes(name):
    backend = backends.get(name)
    if backend.missing() or backend.device_problem("cuda"):
        pytest.skip(backend.missing() or backend.device_problem("cuda"))
    if name == "torch":
        import torch

        x = torch.arange(1024, device="cuda", dtype=torch.float32)
        fn = lambda: torch.sin(x) * 2   # noqa: E731
    else:
        import cupy

        x = cupy.arange(1024, dtype=cupy.float32)
        fn = lambda: cupy.sin(x) * 2    # noqa: E731
    replay = backend.capture(fn, 3)       # three calls in one graph: the last result
    out = replay()
    cuda_driver.synchronize()
    np.testing.assert_allclose(to_numpy(out), np.sin(np.arange(1024, dtype=np.float32)) * 2,
                               rtol=1e-6)


def test_the_apply_roof_is_a_device_copy_of_q_and_k():
    from harness.bench.roofs import ROOF_REGISTRY
    from harness.core.kinds.rotary import RotarySpec

    spec = RotarySpec(64, 32, dtype="bfloat16")
    q = np.arange(2 * 4 * 64 * 32, dtype=np.float32).reshape(2, 4, 64, 32) % 251
    k = q[:, :2] + 1
    roof = ROOF_REGISTRY.get("roof-torch-cuda-copy-apply")
    out_q, out_k = roof.build(spec, q, k, np.arange(64))()
    cuda_driver.synchronize()
    np.testing.assert_array_equal(to_numpy(out_q).astype(np.float32), q)
    np.testing.assert_array_equal(to_numpy(out_k).astype(np.float32), k)
