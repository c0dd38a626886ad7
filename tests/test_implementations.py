"""Correctness regression CI: every built-in implementation, through the path `verify` uses.

Parametrized from the registry, so a new implementation is covered the day it
is registered. An implementation unavailable here (no GPU) is skipped with its
reason, never reported as passing.
"""

from __future__ import annotations

import pytest

from harness import implementations
from harness.core import kinds
from harness.core.checks import check

CASES = {name: kind.cases() for name, kind in kinds.KINDS.items()}   # each kind's full matrix
IMPLS = implementations()


@pytest.mark.parametrize("impl", IMPLS, ids=lambda i: i.name)
def test_implementation_matches_reference(impl):
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    checks = [check(impl, spec) for spec in CASES[impl.kind]]
    bad = [f"{c.spec.short()}: {c.status}: {c.reason}" for c in checks if c.status in ("fail", "error")]
    assert not bad, "\n".join(bad)
    assert any(c.status == "pass" for c in checks), "supports no case of the matrix"


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.name.startswith("seed-")], ids=lambda i: i.name)
def test_seeds_run_their_own_convention(impl):
    """The seeds pass the paper (000/001/003/004) or the half-1 schedule (002) in float32."""
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    spec = CASES["table"][0].replace(length=1500, d_model=128, dtype="float32")
    if impl.name.endswith("-cat"):
        spec = spec.replace(layout="concat", freq_shift=1)
    assert check(impl, spec).status == "pass"
