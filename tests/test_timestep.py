"""The timestep kind: its spec's validation and JSON, the oracle by hand, the reference against
the oracle, the cases, and check() telling a wrong convention or a half-precision angle apart."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import harness
from harness.core import kinds
from harness.core.checks import check
from harness.core.kinds.timestep import CONVENTIONS, TimestepSpec
from harness.core.kinds.timestep.reference import reference, tolerance
from harness.core.kinds.timestep.supports import TimestepSupports
from harness.core.registry import Registry
from harness.core.spec import DTYPES
from tests import timestep_oracle as oracle

KIND = kinds.named("timestep")


# -- the oracle, by hand ---------------------------------------------------------------------
def test_oracle_matches_values_worked_by_hand():
    # dim 4, shift 1: half 2, divisor 1, frequencies 1 and 1/10000
    ddpm = TimestepSpec((1.0, 2.0), 4)
    want = [[math.sin(1), math.sin(1e-4), math.cos(1), math.cos(1e-4)],
            [math.sin(2), math.sin(2e-4), math.cos(2), math.cos(2e-4)]]
    np.testing.assert_allclose(oracle.embedding(ddpm), want, rtol=0, atol=1e-16)
    # guided-diffusion: shift 0 (frequencies 1 and 10000**-1/2 = 0.01), cos first; odd: a zero
    adm = TimestepSpec((3.0,), 5, freq_shift=0, cos_first=True)
    want = [[math.cos(3), math.cos(0.03), math.sin(3), math.sin(0.03), 0.0]]
    np.testing.assert_allclose(oracle.embedding(adm), want, rtol=0, atol=1e-16)
    # scale multiplies the angle; max_period sets the slowest frequency
    scaled = TimestepSpec((0.5,), 4, max_period=100.0, scale=2.0)
    want = [[math.sin(1), math.sin(0.01), math.cos(1), math.cos(0.01)]]
    np.testing.assert_allclose(oracle.embedding(scaled), want, rtol=0, atol=1e-16)


def test_reference_matches_the_oracle_at_50_digits():
    specs = [TimestepSpec.random(5, 33, seed=1), TimestepSpec.random(4, 64, seed=2, freq_shift=0,
                                                                     cos_first=True, scale=1000.0),
             TimestepSpec((0.0, 0.25, 999.0, 1e6), 10, max_period=50.0, freq_shift=-1.5)]
    specs += [KIND.cases()[i] for i in (0, 5, 7)]
    for spec in specs:
        rows = sorted({0, spec.count // 2, spec.count - 1})
        cols = sorted({0, 1, spec.half - 1, spec.half, spec.dim - 2, spec.dim - 1})
        want = oracle.embedding(spec, rows, cols)
        got = reference(spec)[np.ix_(rows, cols)]
        allowed = 1e-15 * (2 + 20 * oracle.angles(spec, rows, cols))
        assert np.all(np.abs(got - want) <= allowed), spec.short()


# -- the spec ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    (dict(timesteps=()), "timesteps must be a non-empty"),
    (dict(timesteps=(1.0, float("nan"))), r"timesteps must be finite numbers >= 0, got nan at index 1"),
    (dict(timesteps=(float("inf"),)), "timesteps must be finite"),
    (dict(timesteps=(-1.0,)), "timesteps must be finite numbers >= 0"),
    (dict(timesteps="123"), "timesteps must be a non-empty sequence"),
    (dict(timesteps=(True,)), "timesteps must be finite"),
    (dict(dim=1), r"dim must be an integer >= 2"),
    (dict(dim=8.0), r"dim must be an integer >= 2"),
    (dict(max_period=1.0), "max_period must be a finite number > 1"),
    (dict(max_period=float("inf")), "max_period must be a finite number > 1"),
    (dict(dim=3), r"freq_shift must be < dim // 2 = 1 for dim=3"),       # DDPM's shift 1 divides by 0
    (dict(dim=8, freq_shift=4), r"freq_shift must be < dim // 2 = 4"),
    (dict(freq_shift=float("nan")), "freq_shift must be a finite number"),
    (dict(scale=0.0), "scale must be a finite number > 0"),
    (dict(scale=-1.0), "scale must be a finite number > 0"),
    (dict(cos_first=1), "cos_first must be True or False"),
    (dict(dtype="float8"), "dtype must be one of"),
    (dict(timesteps=(1e12,), scale=1e4), r"timesteps \* scale must be <= 2\*\*53"),
])
def test_bad_fields_are_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        TimestepSpec(**{"timesteps": (1.0, 2.0), "dim": 8, **fields})


def test_constructors_and_derived_sizes():
    spec = TimestepSpec.uniform(4, 9, t_max=1000.0, dtype="bfloat16")
    assert spec.timesteps == (0.0, 250.0, 500.0, 750.0)
    assert (spec.count, spec.half, spec.denominator, spec.itemsize, spec.nbytes) == (4, 4, 3.0, 2, 72)
    assert TimestepSpec.random(6, 8, seed=3) == TimestepSpec.random(6, 8, seed=3)
    assert all(0 <= t < 5 for t in TimestepSpec.random(50, 8, t_max=5.0).timesteps)
    assert TimestepSpec(np.array([1, 2], dtype=np.int64), 8).timesteps == (1.0, 2.0)
    assert spec.replace(dim=10).dim == 10 and spec.dim == 9
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        TimestepSpec.uniform(0, 8)
    with pytest.raises(ValueError, match="t_max must be a finite number > 0"):
        TimestepSpec.random(3, 8, t_max=-1.0)
    with pytest.raises(ValueError, match="dim must be"):
        spec.replace(dim=0)
    assert spec.short() == "4x9 t=0..750 bfloat16 shift=1"
    assert "scale=1000 shift=0 cos_first" in KIND.bench_spec(4, 8, "float32", "adm-scale1000").short()


def test_json_round_trip_through_spec_from_dict():
    spec = TimestepSpec.random(7, 33, seed=5, freq_shift=0.5, cos_first=True, scale=3.0,
                               max_period=123.0, dtype="float16")
    text = json.dumps(kinds.spec_dict(spec))
    assert kinds.spec_from_dict(json.loads(text)) == spec
    assert kinds.spec_from_dict(json.loads(json.dumps(spec.as_dict()))) == spec   # found by fields
    assert TimestepSpec.from_dict(spec.as_dict()) == spec
    with pytest.raises(ValueError, match="has no field"):
        TimestepSpec.from_dict({**spec.as_dict(), "length": 3})
    with pytest.raises(ValueError, match="needs the field"):
        TimestepSpec.from_dict({"dim": 8})
    with pytest.raises(ValueError, match="dim must be"):
        kinds.spec_from_dict({"kind": "timestep", "timesteps": [1.0], "dim": -2})


# -- the kind: reference, tolerance, cases, bench ------------------------------------------------
def test_reference_places_blocks_and_pads_odd_widths():
    spec = TimestepSpec((10.0, 20.0), 7, freq_shift=0)
    out = harness.reference(spec)
    assert out.shape == (2, 7) and np.all(out[:, -1] == 0)
    np.testing.assert_allclose(out[:, :3] ** 2 + out[:, 3:6] ** 2, np.ones((2, 3)), rtol=0, atol=1e-15)
    flipped = harness.reference(spec.replace(cos_first=True))
    np.testing.assert_array_equal(flipped[:, :3], out[:, 3:6])


def test_half_precision_angles_are_judged_in_float32():
    """A float16 embedding is computed in float32 and rounded once: its allowed angle error is
    float32's, so rounding t = 999.3 to float16 (999.5) must fail, the float32 path pass."""
    spec = TimestepSpec((999.3, 517.1), 64, freq_shift=0, cos_first=True, dtype="float16")
    allowed = tolerance(spec)
    right = reference(spec).astype(np.float16).astype(np.float64)
    wrong = reference(spec.replace(timesteps=tuple(float(np.float16(t)) for t in spec.timesteps)))
    assert np.all(np.abs(right - reference(spec)) <= allowed)
    assert np.max(np.abs(wrong - reference(spec)) / allowed) > 10
    assert allowed.max() < 0.02   # the 1-D table's rule would allow > 1 here: anything


def test_cases_cover_the_family_and_stay_cheap():
    cases = KIND.cases()
    assert 20 <= len(cases) <= 50
    assert max(c.count * c.dim for c in cases) <= 1 << 20
    assert {c.dtype for c in cases} == set(DTYPES)
    assert {c.cos_first for c in cases} == {True, False}
    assert {0.0, 1.0} <= {c.freq_shift for c in cases}
    assert any(c.dim % 2 for c in cases) and any(c.scale != 1 for c in cases)
    assert any(c.max_period != 10000 for c in cases) and any(c.max_timestep >= 1e5 for c in cases)
    assert any(t != int(t) for c in cases for t in c.timesteps)        # fractional timesteps
    quick = KIND.cases(quick=True)
    assert len(quick) < len(cases) and {c.dtype for c in quick} == set(DTYPES)
    assert KIND.cases(seed=1) != KIND.cases(seed=2)
    assert KIND.cases(seed=1) == KIND.cases(seed=1)


def test_bench_spec_spans_1000_radians_in_every_convention():
    for name, fields in CONVENTIONS.items():
        spec = KIND.bench_spec(256, 1024, "float16", name)
        assert (spec.count, spec.dim, spec.dtype) == (256, 1024, "float16")
        assert all(getattr(spec, f) == v for f, v in fields.items())
        assert 990 < spec.max_angle < 1000
    assert list(CONVENTIONS)[0] == "adm"
    with pytest.raises(ValueError, match="convention must be one of"):
        KIND.bench_spec(4, 8, "float32", "nope")
    assert KIND.workload("timestep").shape(KIND.bench_spec(5, 9, "float32", "adm"), 1, 1) == (5, 9)


# -- check(): wrong conventions fail, honest ones pass ----------------------------------------------
def _embedder(change=None, timestep_dtype=np.float64):
    """An implementation computing the reference of a changed spec, from rounded timesteps."""
    def build(spec):
        seen = spec.replace(**(change or {}),
                            timesteps=tuple(float(timestep_dtype(t)) for t in spec.timesteps))
        return lambda: reference(seen).astype(spec.dtype)
    return build


@pytest.fixture(scope="module")
def toy():
    reg = Registry()
    for name, build in [("right", _embedder()), ("swapped", None), ("shift", None),
                        ("t16", _embedder(timestep_dtype=np.float16))]:
        if build is None:
            build = _embedder({"cos_first": True} if name == "swapped" else {"freq_shift": 0.0})
        reg.register(name=name, backend="numpy", workload="timestep",
                     supports=TimestepSupports())(build)
    return reg


@pytest.mark.parametrize("spec", [TimestepSpec.random(16, 64, seed=9),
                                  TimestepSpec.random(16, 33, seed=9, dtype="float16"),
                                  TimestepSpec.random(3, 8, seed=4, t_max=1.0, scale=1000.0)])
def test_check_fails_a_wrong_convention(toy, spec):
    assert check(toy.get("right"), spec).status == "pass"
    for name in ("swapped", "shift", "t16"):
        verdict = check(toy.get(name), spec)
        assert verdict.status == "fail" and "tolerance" in verdict.reason, name


@pytest.mark.parametrize("make", [TimestepSpec.uniform, TimestepSpec.random])
def test_too_many_timesteps_are_refused_before_they_are_built(make):
    """10**10 timesteps would take hundreds of GB as a tuple before __post_init__ saw them."""
    with pytest.raises(ValueError, match=r"a 10000000000 x 8 float64 embedding needs"):
        make(10**10, 8)


def test_random_cases_stay_within_the_angles_the_float32_contract_bounds():
    """scale x t of a random case stays within RANDOM_ANGLE_SPANS' largest (models' spans and
    past): a draw of t 4000 at scale 1000 (4e6 rad) failed every honest float32 implementation."""
    from harness.core.kinds.timestep.cases import RANDOM_ANGLE_SPANS, random_timestep_specs

    specs = random_timestep_specs(400, seed=3)
    assert max(s.max_angle for s in specs) <= max(RANDOM_ANGLE_SPANS) * (1 + 1e-12)
    assert any(s.scale == 1000.0 for s in specs) and any(s.max_angle > 1000 for s in specs)


def test_a_bench_sized_spec_is_validated_at_once_and_a_bad_timestep_still_named(monkeypatch):
    """65,536 timesteps per bench cell: checked item by item only to name a bad one."""
    from harness.core.kinds.timestep import spec as module
    from harness.util.exitcodes import UsageError

    calls = []
    monkeypatch.setattr(module, "is_finite", lambda t: calls.append(t) or True)
    module.TimestepSpec.uniform(4096, 8)
    assert calls == []
    monkeypatch.undo()
    with pytest.raises(UsageError, match="got -2.0 at index 3"):
        module.TimestepSpec((0.0, 1, 2.0, -2.0), 8)
