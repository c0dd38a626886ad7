"""GridSpec: validation names the field and its range, JSON round trip, derived sizes, bench_spec."""

from __future__ import annotations

import json

import pytest

from harness.core.kinds import spec_dict, spec_from_dict
from harness.core.kinds.grid import CONVENTIONS, GRID, GridSpec


@pytest.mark.parametrize("fields, message", [
    ({"grid": (4,)}, "grid must be a tuple of 2 or 3"),
    ({"grid": (2, 3, 4, 5)}, "grid must be a tuple of 2 or 3"),
    ({"grid": (4, 0)}, "grid must be a tuple of integers >= 1"),
    ({"grid": (4, 2.0)}, "grid must be a tuple of integers >= 1"),
    ({"grid": 16}, "grid must be a tuple"),
    ({"d_model": 1}, "d_model must be an integer >= 2"),
    ({"d_model": 6}, "d_model must be a multiple of 4"),                   # MAE 2-D: d % 4
    ({"grid": (2, 2, 2), "d_model": 20, "split": (2, 3, 3)}, "multiple of 16"),   # diffusers 3-D
    ({"grid": (2, 2, 2), "d_model": 8}, "multiple of 6"),
    ({"split": (1, 0)}, "split must be a tuple of integers >= 1"),
    ({"split": (1, 1, 1)}, "split must have one entry per grid axis (2)"),
    ({"axis_order": (0, 0)}, "axis_order must be a permutation of (0, 1)"),
    ({"axis_order": (0,)}, "axis_order must have one entry per grid axis"),
    ({"layout": "blocks"}, "layout must be one of"),
    ({"cos_first": 1}, "cos_first must be True or False"),
    ({"base": 1.0}, "base must be a finite number > 0 and != 1"),
    ({"base": float("nan")}, "base must be"),
    ({"freq_shift": 4}, "freq_shift must be a finite number < 4"),
    ({"extra": -1}, "extra must be an integer >= 0"),
    ({"coords": "pixels"}, "coords must be one of"),
    ({"start": float("inf")}, "start must be a finite number"),
    ({"coords": "normalized", "norm_eps": -1e-6}, "norm_eps must be a finite number >= 0"),
    ({"coords": "normalized", "norm_scale": 0}, "norm_scale must be a finite number > 0"),
    ({"norm_eps": 1e-6}, "coords='index' does not read norm_eps"),
    ({"coords": "normalized", "base_size": 16}, "coords='normalized' does not read base_size"),
    ({"coords": "normalized", "interpolation_scale": 2.0}, "does not read interpolation_scale"),
    ({"base_size": 0}, "base_size must be None or a finite number > 0"),
    ({"interpolation_scale": (1.0, 2.0, 3.0)}, "interpolation_scale must be a number > 0 or one per"),
    ({"interpolation_scale": -1.0}, "interpolation_scale must be"),
    ({"dtype": "int8"}, "dtype must be one of"),
    ({"base": 1e-30, "d_model": 64, "grid": (1000, 1000)}, "the largest angle"),
])
def test_bad_values_name_the_field(fields, message):
    args = {"grid": (4, 4), "d_model": 16, **fields}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GridSpec(**args)


def test_defaults_are_normalised_and_equal_specs_compare_equal():
    spec = GridSpec([3, 5], 32, split=(16, 16), interpolation_scale=2)
    assert spec.grid == (3, 5) and spec.split == (1, 1) and spec.axis_order == (0, 1)
    assert spec.interpolation_scale == (2.0, 2.0)
    assert spec == GridSpec((3, 5), 32, interpolation_scale=(2.0, 2.0))
    assert GridSpec((2, 2, 2), 32, split=(8, 12, 12)).widths == (8, 12, 12)


def test_sizes():
    spec = GridSpec((3, 4, 5), 32, split=(2, 3, 3), extra=2, dtype="bfloat16")
    assert spec.widths == (8, 12, 12) and spec.rows == 62 and spec.cells == 60
    assert spec.itemsize == 2 and spec.nbytes == 62 * 32 * 2
    assert GRID.reference(spec).shape == (62, 32) == GRID.tolerance(spec).shape


@pytest.mark.parametrize("spec", GRID.cases(), ids=lambda s: s.short())
def test_json_round_trip(spec):
    text = json.dumps(spec_dict(spec))
    assert spec_from_dict(json.loads(text)) == spec
    assert GridSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    without_kind = {k: v for k, v in json.loads(text).items() if k != "kind"}
    assert spec_from_dict(without_kind) == spec


def test_short_names_only_what_differs():
    assert GridSpec((14, 14), 64).short() == "14x14x64 float32"
    assert GridSpec((14, 14), 64, axis_order=(1, 0), extra=1).short() == \
        "14x14x64 float32 axis_order=(1, 0) extra=1"
    assert GridSpec((2, 3, 4), 12, dtype="float16").short() == "2x3x4x12 float16"


def test_replace_validates():
    spec = GridSpec((4, 4), 16)
    assert spec.replace(extra=1).rows == 17
    with pytest.raises(ValueError, match="d_model must be a multiple of 4"):
        spec.replace(d_model=18)


@pytest.mark.parametrize("convention", list(CONVENTIONS))
@pytest.mark.parametrize("length", [256, 4096, 16384, 1000])
def test_bench_spec_has_about_length_cells_of_the_width(convention, length):
    spec = GRID.bench_spec(length, 768, "float32", convention)
    assert spec.d_model == 768 and spec.dtype == "float32"
    assert length <= spec.cells < 1.15 * length + 8
    if spec.ndim == 2:
        assert spec.grid[1] - spec.grid[0] <= 2 + spec.grid[0] // 8   # near-square
    assert spec.replace(**CONVENTIONS[convention]) == spec          # it carries the convention

def test_bench_spec_widths_split_for_every_convention():
    for convention in CONVENTIONS:
        for widths in GRID.bench_sizes[1]:
            GRID.bench_spec(4096, widths, "float32", convention)
    assert GRID.bench_spec(4096, 1152, "float32", "diffusers-3d").ndim == 3
