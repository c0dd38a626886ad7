"""The grid reference against tests/grid_oracle.py, and both against values worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.core.kinds.grid import GRID, GridSpec, reference, tolerance
from tests import grid_oracle

S1, C1, S2, C2 = math.sin(1), math.cos(1), math.sin(2), math.cos(2)

#: (spec, row, the whole row worked by hand)
HAND = [
    # MAE, cls row then r = y * W + x: (y=1, x=2) is row 1 + 5; x's block first, sin | cos
    (GridSpec((2, 3), 4, axis_order=(1, 0), extra=1), 6, [S2, C2, S1, C1]),
    (GridSpec((2, 3), 4, axis_order=(1, 0), extra=1), 0, [0, 0, 0, 0]),
    (GridSpec((2, 3), 4), 5, [S1, C1, S2, C2]),
    # DETR: y first, sin cos pairs; y = (0 + 1) / 2 * 2 pi, x = (1 + 1) / 2 * 2 pi
    (GridSpec((2, 2), 4, layout="interleaved", coords="normalized", start=1.0), 1, [0, -1, 0, 1]),
    # 3-D, t gets half: frequencies 1 and 10000 ** (-1 / 2); t = 1 is row 1 of a 2 x 1 x 1 grid
    (GridSpec((2, 1, 1), 8, split=(2, 1, 1)), 1,
     [S1, math.sin(0.01), C1, math.cos(0.01), 0, 1, 0, 1]),
    # timm: every sin (x's, then y's), then every cos; (y=0, x=1)
    (GridSpec((1, 2), 8, layout="function_major", axis_order=(1, 0)), 1,
     [S1, math.sin(0.01), 0, 0, C1, math.cos(0.01), 1, 1]),
    # cos first in concat
    (GridSpec((1, 2), 4, cos_first=True), 1, [1, 0, C1, S1]),
    # diffusers interpolation: y = 3 / (4 / 2) / 2, x = 1 / (2 / 2) / 2; (y=3, x=1) is r = 7
    (GridSpec((4, 2), 4, base_size=2, interpolation_scale=2.0), 7,
     [math.sin(0.75), math.cos(0.75), math.sin(0.5), math.cos(0.5)]),
    # per-axis interpolation scales (CogVideoX) and start (DETR without normalize)
    (GridSpec((1, 1, 3), 6, interpolation_scale=(1.0, 1.0, 4.0), start=1.0), 2,
     [S1, C1, S1, C1, math.sin(0.75), math.cos(0.75)]),
]


@pytest.mark.parametrize("spec, row, expected", HAND, ids=lambda v: getattr(v, "short", lambda: None)())
def test_oracle_and_reference_match_hand_values(spec, row, expected):
    oracle_row = [float(grid_oracle.element(spec, row, c)) for c in range(spec.d_model)]
    np.testing.assert_allclose(oracle_row, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(reference(spec)[row], expected, rtol=0, atol=1e-15)


def test_oracle_table_agrees_with_its_elements():
    spec = GridSpec((2, 3, 2), 24, split=(1, 2, 1), axis_order=(2, 0, 1), layout="interleaved", extra=2)
    whole = grid_oracle.table(spec)
    for row, col in [(0, 5), (2, 0), (7, 13), (13, 23), (9, 4)]:
        assert whole[row, col] == float(grid_oracle.element(spec, row, col))


#: Cases small enough to evaluate whole at 50 digits.
SMALL = [s for s in GRID.cases() if s.rows * s.d_model <= 40_000]


@pytest.mark.parametrize("spec", SMALL, ids=lambda s: s.short())
def test_reference_matches_oracle(spec):
    """Within half the float64 tolerance: the reference is far closer than any float32 table."""
    err = np.abs(reference(spec) - grid_oracle.table(spec))
    assert np.all(err <= tolerance(spec.replace(dtype="float64")) / 2)


@pytest.mark.parametrize("spec", [s for s in GRID.cases() if s not in SMALL], ids=lambda s: s.short())
def test_reference_matches_oracle_on_sampled_elements(spec):
    rng = np.random.default_rng(7)
    ref = reference(spec)
    rows = np.concatenate([[0, spec.rows - 1], rng.integers(0, spec.rows, 30)])
    cols = np.concatenate([[0, spec.d_model - 1], rng.integers(0, spec.d_model, 30)])
    allowed = tolerance(spec.replace(dtype="float64")) / 2
    for row, col in zip(rows, cols):
        assert abs(ref[row, col] - float(grid_oracle.element(spec, int(row), int(col)))) <= allowed[row, col]


def test_cases_cover_every_layout_dtype_coords_and_dimension():
    cases = GRID.cases()
    assert {s.layout for s in cases} == {"concat", "interleaved", "function_major"}
    assert {s.dtype for s in cases} == {"float16", "bfloat16", "float32", "float64"}
    assert {s.coords for s in cases} == {"index", "normalized"}
    assert {s.ndim for s in cases} == {2, 3}
    assert any(s.extra for s in cases) and any(s.base_size for s in cases)
    assert any(s.grid[0] != s.grid[1] for s in cases)
    assert 20 <= len(cases) <= 40 and max(s.rows * s.d_model for s in cases) <= 1.1e6
