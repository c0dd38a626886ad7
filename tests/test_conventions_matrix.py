"""`python -m harness conventions`: equivalence classes of implementations and distances between
conventions, on a small set of implementations (the full run is a report job)."""

from __future__ import annotations

import argparse

import numpy as np

import harness.impls.library_conventions  # noqa: F401  (registers the lib-* conventions)
from harness.core.reference import reference
from harness.core.registry import REGISTRY, Implementation
from harness.core.supports import Supports
from harness.verbs import conventions as cm

NAMES = ["lib-tensor2tensor", "lib-whisper", "lib-xlm", "lib-keras-hub", "lib-marian",
         "numpy-stack", "numpy-cat"]


def off_by_one() -> Implementation:
    """A wrong implementation: every position shifted by one."""
    return Implementation(
        name="off-by-one", backend="numpy", device="cpu", supports_fn=Supports(),
        build=lambda spec: lambda: reference(spec.replace(offset=spec.offset + 1)).astype(
            spec.dtype))


def test_probe_grid():
    assert len(cm.probes(quick=True)) == 8
    grid = cm.probes()
    assert len(grid) == 32 and len({p.label for p in grid}) == 32
    assert {p.spec.odd for p in grid if p.spec.d_model % 2} == {"pad", "extend"}


def test_libraries_with_the_same_convention_share_a_class():
    impls = [REGISTRY.get(n) for n in NAMES] + [off_by_one()]
    grid = cm.probes(quick=True)
    cells, classes = cm.build_tables(impls, grid, timeout_s=30)
    groups = {tuple(sorted(m)) for m, produced in cm.equivalence_classes(
        [i.name for i in impls], grid, classes)}
    assert ("lib-tensor2tensor", "lib-whisper") in groups
    assert ("lib-keras-hub", "lib-xlm") in groups
    assert "differs" in {c.status for c in cells if c.impl == "off-by-one"}
    assert {c.status for c in cells if c.impl == "off-by-one"} <= {"differs", "skip"}
    assert all(c.status in ("match", "skip") for c in cells if c.impl != "off-by-one")
    assert classes[("off-by-one", grid[0].label)] == "x1"


def test_distances_are_a_metric_on_the_probes():
    dist = cm.distances(cm.probes(quick=True)).set_index(["a", "b"])
    labels = [p.label for p in cm.probes(quick=True)]
    for a in labels:
        assert dist.loc[(a, a), "max_abs_diff"] == 0
        for b in labels:
            assert dist.loc[(a, b), "max_abs_diff"] == dist.loc[(b, a), "max_abs_diff"]
    pair = ("interleaved shift=0 sin|cos", "interleaved shift=0 cos|sin")
    swapped = dist.loc[pair, "max_abs_diff"]
    assert np.isclose(swapped, np.sqrt(2), atol=0.01)     # sin - cos peaks at sqrt(2)


def test_verb_writes_its_files(tmp_path, capsys):
    args = argparse.Namespace(only=["lib-*", "numpy-*"], quick=True, out=str(tmp_path),
                              timeout_s=30.0)
    assert cm.main(args, REGISTRY.all()) == 0
    text = (tmp_path / "conventions.md").read_text()
    assert "## Equivalence classes" in text and "lib-tensor2tensor, lib-whisper" in text
    assert (tmp_path / "conventions.csv").stat().st_size > 0
    assert (tmp_path / "convention_distances.csv").stat().st_size > 0
