"""Every piece of code that places columns or computes frequencies, against the oracle.

The reference's column plan (read by the reference, the tolerance and identify),
the fast implementations' column steps, the GPU kernels' per-column frequency
and phase, numba-direct's columns and the general variants' assembly each work
out "which function of which frequency goes in column c" on their own. Each is
checked here against tests/oracle.py, over every small convention, so that a
mistake in one cannot hide behind another that shares it.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from harness import Spec, reference
from harness.core.contract import MAX_ANGLE_ERROR
from harness.core.reference import column_plan, inv_freq
from harness.core.spec import LAYOUTS
from harness.core.tolerance import C_ANGLE, C_FREQ, C_VALUE, eps, tolerance
from harness.impls import numba_impls
from harness.impls._assemble import assemble
from harness.impls._device_columns import frequencies_and_phases
from harness.impls.fast_tables import column_steps
from tests import oracle

reference_module = importlib.import_module("harness.core.reference")   # harness.core.reference is the function
EPS64 = 2.0**-52
#: Fields other than the placement ones, cycled over the specs so every kind of angle shows up.
EXTRAS = [dict(), dict(offset=3, base=500.0), dict(scale=2.5, offset=1000, dtype="float64")]


def small_specs() -> list[Spec]:
    """Every layout x cos_first x odd policy x schedule at widths 2 .. 9 (what Spec accepts)."""
    specs = []
    for d in range(2, 10):
        for odd in ("pad", "extend") if d % 2 else ("error",):
            for layout in LAYOUTS:
                for cos_first in (False, True):
                    for shift in (0, 1):
                        extra = EXTRAS[len(specs) % len(EXTRAS)]
                        try:
                            specs.append(Spec(6, d, layout=layout, cos_first=cos_first, odd=odd,
                                              freq_shift=shift, **extra))
                        except ValueError:   # shift 1 needs two pairs
                            pass
    return specs


SPECS = small_specs()
ids = [s.short() for s in SPECS]


def n_freqs(spec: Spec) -> int:
    return 1 + max(k for _, k in oracle.column_roles(spec))


def first_second(spec: Spec) -> tuple[str, str]:
    return (oracle.COS, oracle.SIN) if spec.cos_first else (oracle.SIN, oracle.COS)


def roles_from_columns(spec: Spec, first_cols, second_cols, first_freq=None, second_freq=None):
    """Per column roles from where the first and second function of each frequency go;
    a column given twice, or a live column given none, fails the comparison."""
    roles: list = [(oracle.ZERO, -1)] * spec.d_model
    f, g = first_second(spec)
    for fn, cols, freqs in ((f, first_cols, first_freq), (g, second_cols, second_freq)):
        freqs = range(len(cols)) if freqs is None else freqs
        for col, k in zip(cols, freqs):
            assert roles[int(col)] == (oracle.ZERO, -1), f"column {col} placed twice"
            roles[int(col)] = (fn, int(k))
    return roles


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_column_plan_is_the_oracles(spec):
    plan = column_plan(spec)
    roles = roles_from_columns(spec, plan.first_cols, plan.second_cols,
                               plan.first_freq, plan.second_freq)
    assert roles == oracle.column_roles(spec)
    assert [c for c, (fn, _) in enumerate(roles) if fn == oracle.ZERO] == list(plan.zero_cols)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_inverse_frequencies_are_the_oracles(spec):
    want = np.array([float(oracle.inverse_frequency(spec, k)) for k in range(n_freqs(spec))])
    got = inv_freq(spec)
    assert got.shape == want.shape
    # np.power rounds the exponent: relative error ~|ln inv_freq| eps
    np.testing.assert_allclose(got, want, rtol=EPS64 * (2 + np.abs(np.log(want))).max(), atol=0)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_reference_is_the_oracles_table(spec):
    """Every element: float64 angles carry a few ulps of |theta| (times |ln inv_freq| for the
    frequency's own rounding), on top of the rounding of the result."""
    want = oracle.table(spec)
    w = oracle.column_frequencies(spec)
    theta = np.arange(spec.offset, spec.offset + spec.length)[:, None] * w
    log_w = np.abs(np.log(np.where(w > 0, w / spec.scale, 1.0)))
    bound = EPS64 * (2 + theta * (2 + log_w))
    assert np.all(np.abs(reference(spec) - want) <= bound)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_tolerance_grows_with_each_columns_own_angle(spec):
    w = oracle.column_frequencies(spec)
    log_w = np.abs(np.log(np.where(w > 0, w / spec.scale, 1.0)))
    position = np.arange(spec.offset, spec.offset + spec.length)[:, None]
    angle_error = eps("float32") * position * w * (C_ANGLE + C_FREQ * log_w)   # float32 angles
    want = C_VALUE * max(eps(spec.dtype), eps("float32")) + np.minimum(angle_error, MAX_ANGLE_ERROR)
    np.testing.assert_allclose(tolerance(spec), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_fast_column_steps_are_the_oracles(spec):
    """impls.fast_tables places its own columns (numpy/torch/tf/numba angle addition)."""
    steps = column_steps(spec)
    fn = np.where(steps.a == 1, oracle.SIN, np.where(steps.b == 1, oracle.COS, oracle.ZERO))
    assert np.all((steps.a == 0) | (steps.b == 0)) and set(steps.a) | set(steps.b) <= {0.0, 1.0}
    want = oracle.column_roles(spec)
    assert list(fn) == [f for f, _ in want]
    live = fn != oracle.ZERO
    assert list(steps.freq[live]) == [k for f, k in want if f != oracle.ZERO]
    w = oracle.column_frequencies(spec)
    np.testing.assert_allclose(steps.column_w[live], w[live], rtol=EPS64 * 16, atol=0)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_device_frequencies_and_phases_are_the_oracles(spec):
    """The GPU kernels' column = sin(angle * f + s): s = 0 for sin, pi/2 for cos, f = s = 0 pads."""
    f, s = frequencies_and_phases(spec)
    names = {0.0: oracle.SIN, math.pi / 2: oracle.COS}
    fn = [oracle.ZERO if fc == 0 and sc == 0 else names[sc] for fc, sc in zip(f, s)]
    assert fn == [role for role, _ in oracle.column_roles(spec)]
    np.testing.assert_allclose(f, oracle.column_frequencies(spec), rtol=EPS64 * 16, atol=0)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_numba_direct_columns_are_the_oracles(spec):
    first, second = numba_impls._columns(spec)
    assert roles_from_columns(spec, first, second) == oracle.column_roles(spec)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_assembly_of_the_general_variants_is_the_oracles(spec):
    """Blocks of labels instead of numbers: the assembled row reads as the oracle's columns."""
    n, short = n_freqs(spec), {oracle.SIN: "s", oracle.COS: "c"}
    sin, cos = ([[f"{short[fn]}{k}" for k in range(n)]] for fn in (oracle.SIN, oracle.COS))
    row = assemble(spec, np.array(sin, dtype=object), np.array(cos, dtype=object),
                   np.array([["0"]], dtype=object),
                   interleave=lambda a, b: np.stack([a, b], axis=2).reshape(1, -1),
                   concat=lambda parts: np.concatenate(parts, axis=1))
    assert " ".join(row[0]) == oracle.labels(spec)


def test_a_plan_bug_shows_against_the_oracle(monkeypatch):
    """The oracle does not move with the code under test: break the column plan and the
    frequencies the reference uses, and the oracle's table stays put while the reference
    no longer matches it."""
    spec = Spec(6, 5, layout="concat", odd="extend", offset=3)
    want = oracle.table(spec)
    assert np.abs(reference(spec) - want).max() < 1e-14
    real_plan, real_freq = reference_module.column_plan, reference_module.inv_freq

    def swapped(s):   # the second block in front of the first
        p = real_plan(s)
        return p.__class__(p.first_cols + len(p.second_cols), p.first_freq,
                           p.second_cols - len(p.first_cols), p.second_freq, p.zero_cols)

    monkeypatch.setattr(reference_module, "column_plan", swapped)
    assert np.array_equal(oracle.table(spec), want) and np.abs(reference(spec) - want).max() > 0.1
    monkeypatch.setattr(reference_module, "column_plan", real_plan)
    monkeypatch.setattr(reference_module, "inv_freq", lambda s: real_freq(s) * (1 + 1e-9))
    assert np.array_equal(oracle.table(spec), want) and np.abs(reference(spec) - want).max() > 1e-12
