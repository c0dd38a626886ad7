"""Every kind's tolerance is the documented contract, element by element (issue 26).

The boundary tests (test_judge_boundary.py) take each bound from the kind's tolerance at run
time, so they catch a judge that does not apply it but not a bound that moved. These tests
write the contract again from its documentation (docs/design.md, "Correctness"), with the
frequencies and column placement from the published formulas, sharing no code with the
tolerance modules: a loosened or tightened constant, a dropped term or a term given to the
wrong column fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import harness
from harness import GridSpec, RotarySpec, Spec, TimestepSpec
from harness.core import kinds

EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
DTYPES = tuple(EPS)
#: The documented contract (harness/core/contract.py's docstring): for a value of angle theta
#: at frequency f, `VALUE_ULPS * max(eps(dtype), eps(angle)) + min(eps(angle) |theta| (ANGLE_ULPS
#: + FREQ_ULPS |ln f|), MAX_ANGLE_ERROR)`, the angle formed in float32 (grade `float32`) or
#: float64 (grade `exact`).
VALUE_ULPS, ANGLE_ULPS, FREQ_ULPS, MAX_ANGLE_ERROR = 4.0, 4.0, 2.0, 0.125
ANGLE_DTYPE = {"float32": "float32", "exact": "float64"}
GRADES = tuple(ANGLE_DTYPE)
#: A grid's positions round a few more times (index, division, 2 pi); a scaled rope_type's blend
#: a few more.
GRID_POSITION_ULPS, ROPE_SCALED_ULPS = 4.0, 4.0


def value_bound(dtype: str, grade: str) -> float:
    return VALUE_ULPS * max(EPS[dtype], EPS[ANGLE_DTYPE[grade]])


def contract(dtype: str, grade: str, theta: np.ndarray, freq: np.ndarray,
             extra_ulps: float = 0.0) -> np.ndarray:
    """The allowed error of values of angle `theta` at frequency `freq` in `dtype`."""
    gain = ANGLE_ULPS + extra_ulps + FREQ_ULPS * np.abs(np.log(freq))
    angle = np.minimum(EPS[ANGLE_DTYPE[grade]] * np.abs(theta) * gain, MAX_ANGLE_ERROR)
    return value_bound(dtype, grade) + angle


def tolerance(spec, grade: str) -> np.ndarray:
    """The kind's tolerance of a grade: `harness.tolerance` is the float32 one."""
    if grade == "float32":
        return harness.tolerance(spec)
    return kinds.of(spec).exact(spec)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


# -- the 1-D table ------------------------------------------------------------------------

@pytest.mark.parametrize("grade", GRADES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fields", [
    dict(length=300, d_model=12),
    dict(length=4, d_model=6, offset=2_000_000),       # float32 angles off by more than 1/8
    dict(length=50, d_model=10, layout="concat", freq_shift=1, offset=7, scale=0.5),
    dict(length=20, d_model=9, odd="pad", base=500.0, cos_first=True),
])
def test_the_table_tolerance_is_the_contract(dtype, grade, fields):
    spec = Spec(dtype=dtype, **fields)
    d, half = spec.d_model, spec.d_model // 2
    freq = spec.base ** (-np.arange(half) / (half - spec.freq_shift))
    position = (np.arange(spec.length) + spec.offset) * spec.scale
    want = np.full((spec.length, d), value_bound(dtype, grade))    # a pad column: the value only
    for k in range(half):
        columns = (2 * k, 2 * k + 1) if spec.layout == "interleaved" else (k, half + k)
        for column in columns:
            want[:, column] = contract(dtype, grade, position * freq[k], freq[k])
    assert_same(tolerance(spec, grade), want)


# -- rotary cos/sin cache -----------------------------------------------------------------

@pytest.mark.parametrize("grade", GRADES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fields, extra", [
    (dict(length=200, head_dim=16), 0.0),
    (dict(length=64, head_dim=12, rotary_dim=8, layout="interleaved", offset=5, base=500.0), 0.0),
    (dict(length=64, head_dim=8, rope_type="linear", factor=4.0), ROPE_SCALED_ULPS),
])
def test_the_rotary_cache_tolerance_is_the_contract(dtype, grade, fields, extra):
    spec = RotarySpec(dtype=dtype, **fields)
    rot = spec.rotary_dim or spec.head_dim
    freq = spec.base ** (-2.0 * np.arange(rot // 2) / rot) / spec.factor
    column_freq = freq[np.arange(rot) % (rot // 2) if spec.layout == "half" else np.arange(rot) // 2]
    theta = (np.arange(spec.length) + spec.offset)[:, None] * column_freq[None, :]
    bound = contract(dtype, grade, theta, column_freq[None, :], extra)
    assert_same(tolerance(spec, grade), np.stack([bound, bound]))


# -- 2-D/3-D grids ------------------------------------------------------------------------

@pytest.mark.parametrize("grade", GRADES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fields", [
    dict(grid=(4, 6), d_model=16),
    dict(grid=(3, 5), d_model=24, extra=2, base=100.0),
])
def test_the_grid_tolerance_is_the_contract(dtype, grade, fields):
    spec = GridSpec(dtype=dtype, **fields)
    axes = len(spec.grid)
    width = spec.d_model // axes
    half = width // 2
    freq = spec.base ** (-np.arange(half) / half)
    want = np.full((spec.extra + math.prod(spec.grid), spec.d_model), value_bound(dtype, grade))
    cells = want[spec.extra:].reshape(*spec.grid, spec.d_model)
    for axis in range(axes):      # grid order, each axis a concat block: sin_k .. then cos_k ..
        theta = np.arange(spec.grid[axis])[:, None] * freq[None, :]
        bound = contract(dtype, grade, theta, freq[None, :], GRID_POSITION_ULPS)
        shape = [1] * axes + [half]
        shape[axis] = spec.grid[axis]
        for start in (axis * width, axis * width + half):
            cells[..., start:start + half] = bound.reshape(shape)
    assert_same(tolerance(spec, grade), want)


# -- timestep embeddings ------------------------------------------------------------------

@pytest.mark.parametrize("grade", GRADES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fields", [
    dict(timesteps=(0.0, 1.0, 250.5, 999.0), dim=16),
    dict(timesteps=(3.0, 47.0, 980.0), dim=11, freq_shift=0.0, scale=2.0, max_period=500.0),
])
def test_the_timestep_tolerance_is_the_contract(dtype, grade, fields):
    spec = TimestepSpec(dtype=dtype, **fields)
    half = spec.dim // 2
    freq = np.exp(-math.log(spec.max_period) * np.arange(half) / (half - spec.freq_shift))
    theta = spec.scale * np.asarray(spec.timesteps)[:, None] * freq[None, :]
    bound = contract(dtype, grade, theta, freq[None, :])
    want = np.full((len(spec.timesteps), spec.dim), value_bound(dtype, grade))
    want[:, :half] = bound
    want[:, half:2 * half] = bound
    assert_same(tolerance(spec, grade), want)


# -- workloads with inputs: what the inputs add to the truth and to the bound -------------

def workload_truth(spec, workload: str, batch: int = 2, heads: int = 3):
    work = kinds.of(spec).workload(workload)
    args = work.arguments(spec, batch, heads)
    return args, work.expected(spec, args, harness.reference(spec), harness.tolerance(spec))


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_is_x_plus_the_table_allowed_the_table_and_one_rounding(dtype):
    spec = Spec(30, 10, dtype=dtype)
    (x,), (expected, allowed) = workload_truth(spec, "forward")
    want = x.astype(np.float64) + harness.reference(spec)[None]
    assert_same(expected, want)
    assert_same(allowed, harness.tolerance(spec)[None] + EPS[dtype] * (1.0 + np.abs(want)))


def rotated(spec: RotarySpec, x: np.ndarray, cos: np.ndarray, sin: np.ndarray):
    """x `[..., seq, head_dim]` rotated (rotate_half, or pairwise for interleaved) by rows of
    cos and sin `[seq, rot]`; with absolute values, the bound's two weights instead."""
    rot = spec.rotary_dim or spec.head_dim
    j = np.arange(rot)
    if spec.layout == "half":
        partner, sign = (j + rot // 2) % rot, np.where(j < rot // 2, -1.0, 1.0)
    else:
        partner, sign = j ^ 1, np.where(j % 2 == 0, -1.0, 1.0)
    own, other = x[..., :rot], x[..., partner]
    return own * cos, sign * other * sin


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fields", [
    dict(length=12, head_dim=8),
    dict(length=10, head_dim=12, rotary_dim=8, layout="interleaved", offset=3, qk_layout="bshd",
         kv_heads=1, position_ids="batch"),
])
def test_apply_is_the_rotation_allowed_the_cache_error_and_three_roundings(dtype, fields):
    """Compared heads first, k's heads repeated to q's; the dims past rotary_dim untouched."""
    spec = RotarySpec(dtype=dtype, **fields)
    rot = spec.rotary_dim or spec.head_dim
    (q, k, ids), (expected, allowed) = workload_truth(spec, "apply")
    rows = ids - spec.offset
    cos, sin = (part[rows] for part in harness.reference(spec))
    tol_cos, tol_sin = (part[rows] for part in harness.tolerance(spec))
    if ids.ndim == 2:       # [batch, seq] ids: a cache row per sequence, shared by the heads
        cos, sin, tol_cos, tol_sin = (a[:, None] for a in (cos, sin, tol_cos, tol_sin))
    want, bound = [], []
    for x in (q, k):
        x = np.asarray(x, dtype=np.float64)
        x = np.swapaxes(x, 1, 2) if spec.qk_layout == "bshd" else x
        x = np.repeat(x, q.shape[1 if spec.qk_layout == "bhsd" else 2] // x.shape[1], axis=1)
        a, b = rotated(spec, x, cos, sin)
        out, limit = x.copy(), np.zeros_like(x)
        out[..., :rot] = a + b
        wa, wb = rotated(spec, np.abs(x), tol_cos, tol_sin)
        ra, rb = rotated(spec, np.abs(x), np.abs(cos), np.abs(sin))
        limit[..., :rot] = wa + np.abs(wb) + 2.0 * EPS[dtype] * (ra + np.abs(rb))
        want.append(out)
        bound.append(np.maximum(limit, np.finfo(np.float64).tiny))
    assert_same(expected, np.stack(want))
    assert_same(allowed, np.stack(bound))


@pytest.mark.parametrize("fields, batch, heads, q_heads", [
    (dict(length=6, head_dim=8), 2, 3, 3),
    (dict(length=6, head_dim=8, kv_heads=2), 1, 3, 4),       # q: a multiple of k's, at least 2x
    (dict(length=5, head_dim=8, kv_heads=1, qk_layout="bshd"), 3, 1, 2),
])
def test_apply_is_compared_heads_first_with_k_repeated_to_q(fields, batch, heads, q_heads):
    spec = RotarySpec(**fields)
    work = kinds.of(spec).workload("apply")
    assert work.shape(spec, batch, heads) == (2, batch, q_heads, spec.length, spec.head_dim)
    _, (expected, _) = workload_truth(spec, "apply", batch, heads)
    assert expected.shape == (2, batch, q_heads, spec.length, spec.head_dim)
