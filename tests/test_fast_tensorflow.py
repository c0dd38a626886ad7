"""tf-function-xla and tf-angleadd-xla: long positions and odd conventions."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, reference
from harness.core.checks import check
from harness.core.registry import REGISTRY
from harness.impls import fast_tensorflow  # noqa: F401  (registers)
from harness.impls.fast_tensorflow import BLOCK

pytest.importorskip("tensorflow")

LONG = Spec(262_144, 8)


@pytest.mark.parametrize("name", ["tf-function-xla", "tf-angleadd-xla"])
def test_long_positions_within_3e_7(name):
    out = REGISTRY.get(name).build(LONG)().numpy()
    assert np.abs(out - reference(LONG)).max() <= 3e-7


@pytest.mark.parametrize("name", ["tf-function-xla", "tf-angleadd-xla"])
@pytest.mark.parametrize("spec", [Spec(BLOCK + 1, 9, odd="extend", cos_first=True),
                                  Spec(40, 7, odd="pad", layout="concat", freq_shift=1, offset=5),
                                  Spec(1, 2, dtype="float64")], ids=lambda s: s.short())
def test_conventions(name, spec):
    assert check(REGISTRY.get(name), spec).status == "pass"
