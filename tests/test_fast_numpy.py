"""numpy-angleadd: slab and block edges, long positions."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, reference
from harness.core.checks import check
from harness.core.registry import REGISTRY
from harness.impls import fast_numpy  # noqa: F401  (registers)
from harness.impls.fast_numpy import BLOCK, SLAB_BLOCKS

LONG = Spec(262_144, 8)
EDGES = [1, BLOCK - 1, BLOCK + 1, BLOCK * SLAB_BLOCKS + 1, BLOCK * SLAB_BLOCKS * 2 + 7]


@pytest.mark.parametrize("length", EDGES)
def test_slab_edges(length):
    for spec in (Spec(length, 6, offset=3), Spec(length, 5, odd="pad", layout="concat", dtype="float64")):
        result = check(REGISTRY.get("numpy-angleadd"), spec)
        assert result.status == "pass", (spec.short(), result.reason)


def test_long_positions_within_3e_7():
    out = REGISTRY.get("numpy-angleadd").build(LONG)()
    assert np.abs(out - reference(LONG)).max() <= 3e-7


def test_result_is_contiguous_and_owns_no_stale_rows():
    """The table is a row prefix of a block-padded buffer: still C-contiguous, right shape."""
    out = REGISTRY.get("numpy-angleadd").build(Spec(BLOCK + 5, 4))()
    assert out.shape == (BLOCK + 5, 4) and out.flags["C_CONTIGUOUS"]
