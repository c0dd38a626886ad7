"""Spec validation: every bad input is a ValueError that names the field and the range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness import Spec, reference
from harness.util import memory


@pytest.mark.parametrize("kwargs, field", [
    (dict(length=0, d_model=8), "length"),
    (dict(length=-3, d_model=8), "length"),
    (dict(length=2.5, d_model=8), "length"),
    (dict(length=True, d_model=8), "length"),
    (dict(length="10", d_model=8), "length"),
    (dict(length=10, d_model=1), "d_model"),
    (dict(length=10, d_model=8.0), "d_model"),
    (dict(length=10, d_model=8, base=0.0), "base"),
    (dict(length=10, d_model=8, base=-5.0), "base"),
    (dict(length=10, d_model=8, base=1.0), "base"),
    (dict(length=10, d_model=8, base=math.inf), "base"),
    (dict(length=10, d_model=8, base=math.nan), "base"),
    (dict(length=10, d_model=2, freq_shift=1), "freq_shift"),
    (dict(length=10, d_model=8, freq_shift=4), "freq_shift"),
    (dict(length=10, d_model=8, freq_shift=math.nan), "freq_shift"),
    (dict(length=10, d_model=8, offset=-1), "offset"),
    (dict(length=10, d_model=8, offset=1.5), "offset"),
    (dict(length=10, d_model=8, offset=2**53), "offset"),
    (dict(length=10, d_model=8, layout="stacked"), "layout"),
    (dict(length=10, d_model=8, dtype="float8"), "dtype"),
    (dict(length=10, d_model=8, dtype="int32"), "dtype"),
    (dict(length=10, d_model=7), "d_model"),
    (dict(length=10, d_model=7, odd="drop"), "odd"),
    (dict(length=10, d_model=8, cos_first=1), "cos_first"),
    (dict(length=10, d_model=8, scale=0.0), "scale"),
    (dict(length=10, d_model=8, scale=-1.0), "scale"),
    (dict(length=10, d_model=8, scale=1e308), "scale"),
    (dict(length=10, d_model=8, scale=2.0, offset=2**53 - 20), "scale"),
    (dict(length=10, d_model=8, base=1e-300, freq_shift=1), "base"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Spec(**kwargs)


def test_error_states_the_allowed_range():
    with pytest.raises(ValueError, match=r"length must be an integer >= 1, got 0"):
        Spec(0, 8)
    with pytest.raises(ValueError, match=r"freq_shift must be < 1 for d_model=2"):
        Spec(4, 2, freq_shift=1)


def test_spec_is_frozen_and_hashable():
    spec = Spec(10, 8)
    with pytest.raises(AttributeError):
        spec.length = 11  # type: ignore[misc]
    assert {spec: 1}[Spec(10, 8)] == 1
    assert spec.replace(length=11).length == 11


def test_derived_quantities_for_each_odd_policy():
    assert (Spec(4, 8).n_freq, Spec(4, 8).denominator) == (4, 4)
    assert (Spec(4, 8, freq_shift=1).denominator) == 3
    pad = Spec(4, 7, odd="pad")
    assert (pad.n_freq, pad.denominator) == (3, 3)
    extend = Spec(4, 7, odd="extend")
    assert (extend.n_freq, extend.denominator) == (4, 3.5)


def test_too_large_table_is_refused_before_allocation(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 30)
    with pytest.raises(ValueError, match=r"needs 8\.0 GiB.*only 1\.0 GiB"):
        Spec(1 << 20, 1024)
    Spec(1 << 10, 1024)  # 8 MiB fits
    with pytest.raises(ValueError, match=r"^a 1048576 x 1024 table in float32 \(4\.0 GiB\): its "
                                         r"float64 reference.* needs 8\.0 GiB"):
        Spec(1 << 20, 1024, dtype="float32")             # the spec's own dtype, then the reference


def test_memory_guard_uses_real_memory():
    assert memory.available_bytes() > 0
    with pytest.raises(ValueError, match="length or d_model"):
        Spec(10**9, 10**6)


def test_angles_must_stay_finite_and_exact_to_a_fraction_of_a_radian():
    with pytest.raises(ValueError, match=r"scale must be > 0 and <= 1e\+15 for positions up to 9"):
        Spec(10, 8, scale=1e308)           # its reference was all NaN
    with pytest.raises(ValueError, match=r"base 1e-300 < 1 makes frequencies grow.*<= 2\*\*53"):
        Spec(10, 8, base=1e-300, freq_shift=1)
    largest = Spec(10, 8, scale=1e15)      # at the limit: still a finite reference
    assert largest.max_angle == pytest.approx(9e15)
    assert np.isfinite(reference(largest)).all()
    assert Spec(10, 8, base=0.5).max_angle == pytest.approx(9 * 0.5 ** (-3 / 4))
    assert Spec(10, 8, scale=1e-300).max_angle == pytest.approx(9e-300)
