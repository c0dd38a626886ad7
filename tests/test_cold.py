"""First calls measured cold: nothing bench does for a cell runs the implementation's code before
its first call is timed (the end-to-end case, a JIT backend in fresh workers, is in test_bench)."""

from __future__ import annotations

import numpy as np

from harness.bench.measure import measure
from tests.test_bench_validity import QUIET, FakeBenchmark, cell, impl_of


def test_a_suspects_confirming_build_comes_after_its_first_call():
    """A builder that keeps a table's bytes is confirmed a lookup by a longer build; that build
    may compile or fill caches, so it must not run before the first call is timed."""
    events: list[str] = []

    def build(spec):
        events.append(f"build {spec.length}")
        kept = np.zeros((spec.length, spec.d_model), spec.dtype)

        def call():
            events.append(f"call {spec.length}")
            return kept.copy()

        return call

    c = cell(length=64)
    outcome = measure(impl_of(build), c, FakeBenchmark(), "t", meter=QUIET)
    assert outcome.status == "invalid" and "lookup" in outcome.reason
    longer = next(e for e in events if e.startswith("build") and e != "build 64")
    assert events.index("call 64") < events.index(longer)
