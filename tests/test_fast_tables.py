"""The angle-addition helpers every fast implementation shares (impls/table/_angle_addition.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, reference
from harness.impls.table._angle_addition import column_steps, sincos_rows, to_columns

CONVENTIONS = [
    dict(),
    dict(layout="concat", freq_shift=1),
    dict(cos_first=True),
    dict(cos_first=True, layout="concat"),
    dict(d_model=33, odd="pad"),
    dict(d_model=33, odd="extend", layout="concat"),
    dict(scale=3.5, offset=7, base=500.0),
]


def _arange(n):
    return np.arange(n, dtype=np.float64)


def _take(x, index):
    return np.take(x, index, axis=1)


@pytest.mark.parametrize("extra", CONVENTIONS, ids=lambda e: " ".join(f"{k}={v}" for k, v in e.items()))
def test_column_steps_rebuild_every_convention(extra):
    """a sin(theta) + b cos(theta) with theta = (p + offset) w[freq] is the reference table."""
    spec = Spec(**{"length": 50, "d_model": 16, **extra})
    steps = column_steps(spec)
    theta = np.arange(spec.offset, spec.offset + spec.length)[:, None] * steps.column_w
    table = steps.a * np.sin(theta) + steps.b * np.cos(theta)
    np.testing.assert_allclose(table, reference(spec), rtol=0, atol=1e-13)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 64, 65, 1000])
@pytest.mark.parametrize("start, step", [(0, 1), (2, 64), (1_000_000, 32)])
def test_sincos_rows_is_the_direct_progression(count, start, step):
    """Two-level angle addition stays within a few float64 ulps of direct sin/cos."""
    w = 10000.0 ** -(np.arange(8) / 8)
    s, c = sincos_rows(np, _arange, start, step, count, w)
    theta = (start + step * np.arange(count))[:, None] * w
    assert s.shape == c.shape == (count, w.size)
    # float64 rounding of the angle itself is ~theta * 1e-16 in both paths
    atol = 8e-16 * (1 + theta.max())
    np.testing.assert_allclose(s, np.sin(theta), rtol=0, atol=atol)
    np.testing.assert_allclose(c, np.cos(theta), rtol=0, atol=atol)


def test_to_columns_gives_the_function_and_its_derivative():
    """P = g(theta), Q = g'(theta): sin -> (sin, cos), cos -> (cos, -sin), padding -> 0."""
    spec = Spec(3, 5, odd="pad", cos_first=True)
    steps = column_steps(spec)
    theta = np.array([[0.3, 0.7], [1.1, 2.0], [5.0, -1.0]])
    P, Q = to_columns(np, np.sin(theta), np.cos(theta), steps.select, take=_take)
    # cos_first interleaved: cos0 sin0 cos1 sin1 pad
    np.testing.assert_array_equal(P, np.stack([np.cos(theta[:, 0]), np.sin(theta[:, 0]),
                                               np.cos(theta[:, 1]), np.sin(theta[:, 1]),
                                               np.zeros(3)], axis=1))
    np.testing.assert_array_equal(Q, np.stack([-np.sin(theta[:, 0]), np.cos(theta[:, 0]),
                                               -np.sin(theta[:, 1]), np.cos(theta[:, 1]),
                                               np.zeros(3)], axis=1))
