"""The rotary reference against tests/rotary_oracle.py (mpmath, 50 digits, no shared code), and
the oracle against values worked by hand."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from harness.core.kinds.rotary import RotarySpec, apply_reference, cache_reference
from harness.core.kinds.rotary.apply import apply_inputs
from harness.core.kinds.rotary.reference import heads_first
from harness.core.kinds.rotary.cases import rotary_cases
from tests import rotary_oracle as oracle

EPS = float(np.finfo(np.float64).eps)
LONGROPE = dict(rope_type="longrope", factor=4.0, original_max_position_embeddings=64,
                short_factor=tuple(1.0 + k / 8 for k in range(12)),
                long_factor=tuple(1.0 + k * k for k in range(12)))
#: Every rope_type in both layouts, beside the verify cases.
SCALED = [dict(rope_type="linear", factor=3.0),
          dict(rope_type="dynamic", factor=4.0, max_position_embeddings=50),
          dict(rope_type="yarn", factor=16.0, original_max_position_embeddings=32),
          dict(rope_type="yarn", factor=16.0, original_max_position_embeddings=32, truncate=False,
               mscale=1.0, mscale_all_dim=0.5),
          dict(rope_type="llama3", factor=8.0, original_max_position_embeddings=64, base=500000.0),
          dict(LONGROPE, length=60), dict(LONGROPE, length=65)]
SPECS = rotary_cases() + [RotarySpec(**{"length": 120, "head_dim": 32, "rotary_dim": 24, "offset": 3,
                                        "layout": layout, **fields})
                          for fields in SCALED for layout in ("half", "interleaved")]


def f(x) -> float:
    return float(x)


# -- the oracle against hand-worked values ----------------------------------------------------
def test_oracle_default_frequencies_and_rows_by_hand():
    spec = RotarySpec(1, 4, offset=1)
    assert [f(oracle.inverse_frequency(spec, k)) for k in range(2)] == pytest.approx([1.0, 0.01], rel=1e-15)
    cos = [f(oracle.cache_element(spec, "cos", 0, j)) for j in range(4)]
    sin = [f(oracle.cache_element(spec, "sin", 0, j)) for j in range(4)]
    assert cos == pytest.approx([math.cos(1), math.cos(0.01), math.cos(1), math.cos(0.01)], rel=1e-15)
    assert sin == pytest.approx([math.sin(1), math.sin(0.01), math.sin(1), math.sin(0.01)], rel=1e-15)
    gptj = spec.replace(layout="interleaved")
    cos = [f(oracle.cache_element(gptj, "cos", 0, j)) for j in range(4)]
    assert cos == pytest.approx([math.cos(1), math.cos(1), math.cos(0.01), math.cos(0.01)], rel=1e-15)


def test_oracle_scaled_frequencies_by_hand():
    linear = RotarySpec(1, 4, rope_type="linear", factor=2.0)
    assert [f(oracle.inverse_frequency(linear, k)) for k in range(2)] == pytest.approx([0.5, 0.005])
    # seq 20 over mpe 10 at factor 2: base * (2 * 20 / 10 - 1) ** (4 / 2) = 90000
    dynamic = RotarySpec(20, 4, rope_type="dynamic", factor=2.0, max_position_embeddings=10)
    assert [f(oracle.inverse_frequency(dynamic, k)) for k in range(2)] == pytest.approx([1.0, 1 / 300])
    # wavelengths 2 pi (short: kept) and 200 pi, between ompe/4 = 500 and ompe = 2000: smoothed
    llama3 = RotarySpec(1, 4, rope_type="llama3", factor=8.0, original_max_position_embeddings=2000)
    smooth = (2000 / (200 * math.pi) - 1) / 3
    want = [1.0, (1 - smooth) * 0.01 / 8 + smooth * 0.01]
    assert [f(oracle.inverse_frequency(llama3, k)) for k in range(2)] == pytest.approx(want, rel=1e-14)


def test_oracle_scales_by_hand():
    yarn = RotarySpec(1, 4, rope_type="yarn", factor=math.e, original_max_position_embeddings=64)
    assert f(oracle.cos_sin_scale(yarn)) == pytest.approx(1.1, rel=1e-15)
    longrope = RotarySpec(100, 4, rope_type="longrope", factor=64.0, original_max_position_embeddings=64,
                          short_factor=(1.0, 1.0), long_factor=(1.0, 2.0))
    assert f(oracle.cos_sin_scale(longrope)) == pytest.approx(math.sqrt(2), rel=1e-15)
    assert f(oracle.inverse_frequency(longrope, 1)) == pytest.approx(0.005, rel=1e-15)   # long: seq 100 > 64
    assert f(oracle.inverse_frequency(longrope.replace(length=64), 1)) == pytest.approx(0.01, rel=1e-15)


def test_oracle_rotation_by_hand():
    spec = RotarySpec(1, 6, rotary_dim=4, offset=1)       # quarter turn is not needed: cos 1, sin 1
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    c1, s1, c2, s2 = math.cos(1), math.sin(1), math.cos(0.01), math.sin(0.01)
    want = [1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2, 5.0, 6.0]
    assert [f(v) for v in oracle.rotated_row(spec, x, 1)] == pytest.approx(want, rel=1e-15)
    gptj = spec.replace(layout="interleaved")
    want = [1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c2 - 4 * s2, 4 * c2 + 3 * s2, 5.0, 6.0]
    assert [f(v) for v in oracle.rotated_row(gptj, x, 1)] == pytest.approx(want, rel=1e-15)


# -- the reference against the oracle -----------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.short())
def test_inv_freq_and_scale_match_the_oracle(spec):
    want = np.array([f(oracle.inverse_frequency(spec, k)) for k in range(spec.n_freq)])
    np.testing.assert_allclose(spec.inv_freq(), want, rtol=64 * EPS, atol=0)
    assert spec.attention_scaling == pytest.approx(f(oracle.cos_sin_scale(spec)), rel=4 * EPS)


def _rows(spec) -> list[int]:
    return sorted({0, spec.length // 2, spec.length - 1})


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.short())
def test_cache_matches_the_oracle(spec):
    cos, sin = cache_reference(spec)
    cols = range(spec.rot) if spec.rot <= 64 else sorted({*range(8), *range(spec.rot - 8, spec.rot)})
    for row in _rows(spec):
        for col in cols:
            theta = abs(f(oracle.angle(spec, row, col)))
            allowed = 16 * EPS * (1 + theta) * spec.attention_scaling
            for part, got in (("cos", cos), ("sin", sin)):
                want = f(oracle.cache_element(spec, part, row, col))
                assert abs(got[row, col] - want) <= allowed, (part, row, col, got[row, col], want)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.length * s.head_dim <= 20000][::3],
                         ids=lambda s: s.short())
def test_apply_matches_the_oracle(spec):
    q, k, position_ids = apply_inputs(spec, batch=1, heads=2)
    got = apply_reference(spec, q, k, position_ids)      # q head 1, and the k head serving it
    ids = position_ids.reshape(-1, spec.length)[0]
    for which, x in enumerate((q, k)):
        x = heads_first(spec, x)
        head = 1 * x.shape[1] // got.shape[2]
        for seq in _rows(spec):
            row = x[0, head, seq]
            want = oracle.rotated_row(spec, row, int(ids[seq]))
            theta = spec.max_position * float(np.max(spec.inv_freq()))
            allowed = 32 * EPS * (1 + theta) * spec.attention_scaling * (1 + np.abs(row).max())
            np.testing.assert_allclose(got[which, 0, 1, seq], [f(v) for v in want], rtol=0, atol=allowed)


def test_oracle_digits_are_what_they_claim():
    assert oracle.DIGITS >= 40 and mpmath.mp.dps == 15   # the oracle works in its own precision
