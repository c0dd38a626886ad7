"""`python -m harness precision`: the methods behave as the guide (docs/precision.md) says, and the
verb writes its csv, markdown and plot."""

from __future__ import annotations

import argparse
import math

import pytest

import harness.impls.library_conventions  # noqa: F401  (registers lib-xlm)
from harness.core.registry import REGISTRY
from harness.verbs import precision
from harness.verbs.precision import table


@pytest.fixture(scope="module")
def errors():
    df = table.frame(table.measure_methods([0, 100_000]))
    return {(r.source, r.dtype, r.position): r.max_abs_err for r in df.itertuples()}


def test_direct_float32_error_grows_with_position(errors):
    assert errors[("numpy direct", "float32", 0)] < 1e-6
    assert errors[("numpy direct", "float32", 100_000)] > 1e-3


@pytest.mark.parametrize("method", ["f64-angles", "angle-addition", "f64-table"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_float64_based_methods_stay_within_two_ulps_in_float32(errors, backend, method):
    if (f"{backend} {method}", "float32", 0) not in errors:
        pytest.skip(f"{backend} not installed")
    assert errors[(f"{backend} {method}", "float32", 100_000)] < 2.5e-7


def test_float16_direct_overflows_and_bfloat16_is_torch_only(errors):
    assert math.isinf(errors[("numpy direct", "float16", 100_000)])
    assert errors[("numpy f64-table", "float16", 100_000)] < 5e-4
    assert not any(src.startswith("numpy") and dt == "bfloat16" for src, dt, _ in errors)


def test_verb_writes_csv_markdown_and_plot(tmp_path, capsys):
    args = argparse.Namespace(only=["lib-xlm"], quick=True, out=str(tmp_path), timeout_s=30.0,
                              kind="table")
    assert precision.main(args, REGISTRY.all()) == 0
    df = __import__("pandas").read_csv(tmp_path / "precision.csv")
    assert {"lib-xlm", "numpy direct"} <= set(df.source)
    assert "| lib-xlm | float32 |" in (tmp_path / "precision.md").read_text()
    assert (tmp_path / "plots" / "precision.png").stat().st_size > 10_000
