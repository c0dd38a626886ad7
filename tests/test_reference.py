"""The float64 reference against the oracle at random elements of large tables of every convention.

Small tables are compared whole in test_oracle_placement.py; here the angles
are large (a million positions, scale 1000), where float64 rounding shows.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness import Spec, reference
from tests import oracle

SPECS = [
    Spec(2000, 64),
    Spec(300, 64, layout="concat", freq_shift=1),
    Spec(50, 33, odd="pad", layout="concat", freq_shift=1, base=500.0),
    Spec(50, 33, odd="extend"),
    Spec(40, 16, cos_first=True, offset=2, scale=1000.0),
    Spec(10, 8, offset=1_000_000),
    Spec(100_000, 4, base=123.5),
    Spec(20, 9, odd="extend", layout="concat", cos_first=True, offset=999_990, scale=3.0),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.short())
def test_reference_matches_the_oracle_far_out(spec):
    table = reference(spec)
    w = oracle.column_frequencies(spec)
    log_w = np.abs(np.log(np.where(w > 0, w / spec.scale, 1.0)))
    rng = random.Random(42)
    for _ in range(40):
        p, col = rng.randrange(spec.length), rng.randrange(spec.d_model)
        # float64 rounding of the angle: a few ulps of it, more for the frequency's own rounding
        bound = 2.0**-52 * (2 + (p + spec.offset) * w[col] * (2 + log_w[col]))
        assert abs(float(oracle.element(spec, p, col)) - table[p, col]) <= bound, (p, col)


def test_reference_is_float64_with_the_right_shape():
    table = reference(Spec(7, 10, dtype="float16"))
    assert table.dtype == np.float64 and table.shape == (7, 10)


def test_padding_column_is_zero_and_extend_column_is_sin():
    """Worked by hand: d = 7 'extend' has H = 3.5, so the last column is sin(p * base ** (-3 / 3.5))."""
    pad = reference(Spec(5, 7, odd="pad"))
    assert np.all(pad[:, -1] == 0)
    ext = reference(Spec(5, 7, odd="extend"))
    theta = np.arange(5) * 10000.0 ** (-3 / 3.5)
    np.testing.assert_allclose(ext[:, -1], np.sin(theta), atol=1e-15)
