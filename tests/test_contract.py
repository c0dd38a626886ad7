"""The angle contract of every kind: no tolerance reaches the values it judges, the angle's
error is float32's whatever the output dtype, and the grade says which contract was met."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, assert_callable, check_callable
from harness.core import contract, kinds

#: A tolerance must stay this far inside the span of the values it judges (it is a few ulps
#: plus float32's angle error; the span of a sinusoid is 2).
SPAN_FRACTION = 0.25


def _cases(kind: kinds.Kind, quick: bool) -> list:
    return list(kind.cases(quick=quick, n_random=8, seed=0))


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_no_tolerance_reaches_the_range_of_the_values_it_judges(name, quick):
    kind = kinds.named(name)
    worst = 0.0
    for spec in _cases(kind, quick):
        reference, tolerance = kind.reference(spec), kind.tolerance(spec)
        for work in kind.workloads:
            args = work.arguments(spec, work.verify_batch, work.verify_heads)
            expected, allowed = work.expected(spec, args, reference, tolerance)
            span = float(expected.max() - expected.min()) or float(np.abs(expected).max()) or 1.0
            ratio = float(allowed.max()) / span
            assert ratio < SPAN_FRACTION, (spec.short(), work.name, float(allowed.max()), span)
            worst = max(worst, ratio)
    assert worst > 0


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_the_angle_term_is_float32s_whatever_the_output_dtype(name):
    """Only the few ulps of the output change with the dtype (float32's at least, at this
    grade): never eps(output) x angle."""
    kind = kinds.named(name)
    spec = next(s for s in _cases(kind, True) if s.dtype == "float32" and kind.reference(s).size > 64)
    by_dtype = {d: kind.tolerance(spec.replace(dtype=d)) for d in ("float16", "bfloat16", "float32", "float64")}
    for dtype, tol in by_dtype.items():
        value_term = contract.C_VALUE * (max(contract.eps(dtype), contract.eps("float32"))
                                         - contract.eps("float32"))
        scale = getattr(spec, "attention_scaling", 1.0)
        np.testing.assert_allclose(tol - by_dtype["float32"], value_term * scale, rtol=1e-9, atol=1e-15)
    exact = kind.exact(spec)
    assert np.all(exact <= by_dtype["float32"]) and np.any(exact < by_dtype["float32"])


def test_grades():
    err = np.array([1e-7, 2e-7])
    loose, tight = np.array([1e-3, 1e-3]), np.array([4e-7, 4e-7])
    assert contract.grade(err, loose, tight) == "exact"
    assert contract.grade(err * 10, loose, tight) == "float32"
    assert contract.grade(err * 1e5, loose, tight) == "fail"
    assert contract.grade(err, loose, None) == "float32"
    assert contract.at_least("exact", "float32") and not contract.at_least("float32", "exact")
    with pytest.raises(ValueError, match="require must be one of"):
        contract.at_least("exact", "fail")


def _float32_angles(spec: Spec):
    """Model code's table: float32 positions, frequencies and angles."""
    def build():
        pos = np.arange(spec.length, dtype=np.float32)[:, None]
        inv = (spec.base ** (-np.arange(spec.n_freq) / spec.denominator)).astype(np.float32)
        theta = pos * inv
        out = np.empty((spec.length, spec.d_model), np.float32)
        out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
        return out.astype(spec.dtype)
    return build


def _float64_angles(spec: Spec):
    def build():
        theta = np.arange(spec.length)[:, None] * spec.base ** (-np.arange(spec.n_freq) / spec.denominator)
        out = np.empty((spec.length, spec.d_model))
        out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
        return out.astype(spec.dtype)
    return build


def test_check_callable_grades_and_assert_callable_can_require_exact():
    spec = Spec(20000, 16)
    f32, f64 = check_callable(_float32_angles(spec), spec), check_callable(_float64_angles(spec), spec)
    assert (f32.status, f32.grade) == ("pass", "float32")
    assert (f64.status, f64.grade) == ("pass", "exact")
    assert_callable(_float64_angles(spec), spec, require="exact")
    with pytest.raises(AssertionError, match="graded float32, exact required"):
        assert_callable(_float32_angles(spec), spec, require="exact")
    wide = Spec(20000, 16, dtype="float64")         # float32 angles in a float64 table
    assert check_callable(_float32_angles(wide), wide).grade == "float32"
    assert check_callable(_float64_angles(wide), wide).grade == "exact"
    with pytest.raises(ValueError, match="require must be one of"):
        assert_callable(_float64_angles(spec), spec, require="float16")


PLUGIN = '''
import numpy as np
from harness import Supports, register

PAPER = Supports(layouts=("interleaved",), freq_shifts=(0,), dtypes=("float32", "float64"))


def _table(spec, angle):
    k = np.arange(spec.n_freq)
    inv = (spec.base ** (-k / spec.denominator)).astype(angle)
    pos = np.arange(spec.offset, spec.offset + spec.length).astype(angle)
    theta = pos[:, None] * inv
    out = np.empty((spec.length, spec.d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out.astype(spec.dtype)


@register(name="angles-f32", backend="numpy", supports=PAPER)
def f32(spec):
    return lambda: _table(spec, np.float32)


@register(name="angles-f64", backend="numpy", supports=PAPER)
def f64(spec):
    return lambda: _table(spec, np.float64)
'''


def test_verify_grades_in_its_csv_and_json_and_require_exact_fails_less(tmp_path, capsys):
    import json

    from harness.cli import main

    plugin = tmp_path / "graded_plugin.py"
    plugin.write_text(PLUGIN)
    args = ["verify", "--quick", "--plugin", str(plugin), "--only", "angles-*", "--random", "0",
            "--json", "--in-process"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    found = json.loads(capsys.readouterr().out)
    grades = {r["impl"]: r["grade"] for r in found["implementations"]}
    assert found["ok"] and grades == {"angles-f32": "float32", "angles-f64": "exact"}
    assert "grade" in (tmp_path / "a" / "verify.csv").read_text().splitlines()[0].split(",")
    assert main(args + ["--out", str(tmp_path / "b"), "--require", "exact"]) == 1
    strict = json.loads(capsys.readouterr().out)
    assert strict["failed"] == ["angles-f32"] and strict["require"] == "exact"
    assert all(p["impl"] == "angles-f32" and p["grade"] == "float32" for p in strict["problems"])


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_quick_cases_cover_every_dtype_of_the_full_list(name):
    """bench's verify post-step runs the quick list: a dtype missing there is timed but never
    graded (the bfloat16 grid was, in results/20261127-230033-3012b01)."""
    kind = kinds.named(name)
    quick = {spec.dtype for spec in kind.cases(quick=True, n_random=0, seed=0)}
    assert quick == {spec.dtype for spec in kind.cases(quick=False, n_random=0, seed=0)}
