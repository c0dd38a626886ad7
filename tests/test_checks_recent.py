"""In-process checks share a case's expectation between implementations, and nobody can write it."""

from __future__ import annotations

import numpy as np
import pytest

from harness import implementations
from harness.core import checks
from harness.core.spec import Spec


def test_one_case_is_expected_once_for_every_implementation_and_held_read_only(monkeypatch):
    computed = []
    real = checks.expect
    monkeypatch.setattr(checks, "_RECENT", type(checks._RECENT)())
    monkeypatch.setattr(checks, "expect", lambda *a: computed.append(a[:2]) or real(*a))
    spec = Spec(40, 16, dtype="float32")
    names = ("numpy-stack", "numpy-angleadd", "seed-numpy-stack")
    impls = [i for i in implementations() if i.name in names]
    verdicts = [checks.check(impl, spec) for impl in impls]
    assert len(impls) == 3 and all(v.status == "pass" for v in verdicts)
    assert computed == [("table", spec)]
    (held,) = checks._RECENT.values()
    with pytest.raises(ValueError):
        held.expected[0, 0] = np.nan


def test_another_case_gets_its_own_expectation(monkeypatch):
    monkeypatch.setattr(checks, "_RECENT", type(checks._RECENT)())
    (impl,) = [i for i in implementations() if i.name == "numpy-stack"]
    for length in (40, 41):
        assert checks.check(impl, Spec(length, 16, dtype="float32")).status == "pass"
    shapes = sorted(e.expected.shape for e in checks._RECENT.values())
    assert shapes == [(40, 16), (41, 16)]
