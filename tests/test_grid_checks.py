"""check() on grids: the right tables pass, and a wrong axis order, a transposed grid, a missing
or non-zero cls row, DETR counted from 0, or a cached table fail."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import kinds
from harness.core.checks import check
from harness.core.kinds.grid import CONVENTIONS, GRID, GridSpec
from harness.core.registry import REGISTRY, Implementation
from harness.impls._grid_support import GridSupports  # importing impls registers every implementation
from harness.impls.grid_numpy import build_grid_numpy

MAE = GridSpec((6, 10), 32, **CONVENTIONS["mae"])
DETR = GridSpec((5, 7), 32, **CONVENTIONS["detr"])


def impl_of(build) -> Implementation:
    return Implementation(name="probe", backend="numpy", device="cpu", build=build,
                          supports_fn=GridSupports(), workload="grid", kind="grid")


def builds(other: GridSpec):
    """A builder that ignores the spec it is given and builds `other` (a convention mistake)."""
    return impl_of(lambda spec: build_grid_numpy(other))


def test_the_kind_is_discovered_with_its_implementations():
    assert kinds.named("grid") is GRID and kinds.of_workload("grid") is GRID
    assert kinds.of(MAE) is GRID
    names = {i.name for i in REGISTRY.all() if i.kind == "grid"}
    assert {"grid-python", "grid-numpy", "grid-numpy-broadcast", "grid-numba", "grid-tf", "grid-torch",
            "grid-torch-broadcast", "grid-torch-cuda"} <= names
    assert REGISTRY.get("grid-torch-cuda").device == "cuda"


@pytest.mark.parametrize("spec", [MAE, DETR, GridSpec((2, 3, 4), 32, **CONVENTIONS["diffusers-3d"])],
                         ids=lambda s: s.short())
def test_the_right_table_passes(spec):
    assert check(impl_of(build_grid_numpy), spec).status == "pass"


@pytest.mark.parametrize("spec, wrong", [
    (MAE, MAE.replace(axis_order=(0, 1))),                            # y's block first
    (MAE, GridSpec((10, 6), 32, axis_order=(1, 0), extra=1)),         # (W, H) for (H, W)
    (MAE, MAE.replace(layout="interleaved")),
    (MAE, MAE.replace(cos_first=True)),
    (DETR, DETR.replace(coords="index", norm_eps=0.0)),               # not normalised
    (DETR, DETR.replace(start=0.0)),                                  # counted from 0
    (DETR, DETR.replace(start=0.5)),                                  # Deformable's half pixel
    (GridSpec((2, 3, 4), 32, **CONVENTIONS["diffusers-3d"]), GridSpec((2, 3, 4), 32, split=(1, 1, 2))),
], ids=lambda s: s.short())
def test_a_wrong_convention_fails(spec, wrong):
    result = check(builds(wrong), spec)
    assert result.status == "fail" and "error" in result.reason


def test_a_missing_cls_row_fails():
    result = check(builds(MAE.replace(extra=0)), MAE)
    assert result.status == "fail" and "shape (60, 32), expected (61, 32)" in result.reason


def test_a_cls_row_that_is_not_zero_fails():
    def build(spec):
        cells = build_grid_numpy(spec.replace(extra=0))
        return lambda: np.concatenate([cells()[:1], cells()])   # the embedding of (0, 0) as the cls row

    result = check(impl_of(build), MAE)
    assert result.status == "fail" and result.worst_pos == 0


def test_a_cached_table_fails():
    def build(spec):
        table = build_grid_numpy(spec)()
        return lambda: table

    result = check(impl_of(build), MAE)
    assert result.status == "fail" and "cached" in result.reason
