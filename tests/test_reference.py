"""The float64 reference against 50-digit mpmath, at random elements of every convention."""

from __future__ import annotations

import random

import mpmath
import numpy as np
import pytest

from harness import Spec, reference
from harness.reference import column_plan

mpmath.mp.dps = 50


def mp_element(spec: Spec, p: int, col: int) -> mpmath.mpf:
    """The table's element from the formulas in DESIGN.md, evaluated in 50 digits."""
    plan = column_plan(spec)
    if col in plan.zero_cols:
        return mpmath.mpf(0)
    if col in plan.first_cols:
        k, fn = int(plan.first_freq[list(plan.first_cols).index(col)]), "first"
    else:
        k, fn = int(plan.second_freq[list(plan.second_cols).index(col)]), "second"
    half = mpmath.mpf(spec.d_model) / 2 if spec.odd == "extend" else mpmath.mpf(spec.d_model // 2)
    inv = mpmath.power(mpmath.mpf(spec.base), -mpmath.mpf(k) / (half - mpmath.mpf(spec.freq_shift)))
    theta = mpmath.mpf(spec.scale) * (p + spec.offset) * inv
    use_sin = (fn == "first") != spec.cos_first
    return mpmath.sin(theta) if use_sin else mpmath.cos(theta)


SPECS = [
    Spec(2000, 64),
    Spec(300, 64, layout="concat", freq_shift=1),
    Spec(50, 33, odd="pad", layout="concat", freq_shift=1, base=500.0),
    Spec(50, 33, odd="extend"),
    Spec(40, 16, cos_first=True, offset=2, scale=1000.0),
    Spec(10, 8, offset=1_000_000),
    Spec(100_000, 4, base=123.5),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.short())
def test_reference_matches_mpmath(spec):
    table = reference(spec)
    rng = random.Random(42)
    for _ in range(40):
        p, col = rng.randrange(spec.length), rng.randrange(spec.d_model)
        exact = mp_element(spec, p, col)
        # float64 rounding of an angle up to ~1e6: a few ulps of the angle
        bound = 1e-15 * (4 + 4 * spec.max_angle)
        assert abs(float(exact) - table[p, col]) <= bound, (p, col)


def test_reference_is_float64_with_the_right_shape():
    table = reference(Spec(7, 10, dtype="float16"))
    assert table.dtype == np.float64 and table.shape == (7, 10)


def test_padding_column_is_zero_and_extend_column_is_sin():
    pad = reference(Spec(5, 7, odd="pad"))
    assert np.all(pad[:, -1] == 0)
    ext = reference(Spec(5, 7, odd="extend"))
    theta = np.arange(5) * 10000.0 ** (-3 / 3.5)
    np.testing.assert_allclose(ext[:, -1], np.sin(theta), atol=1e-15)
