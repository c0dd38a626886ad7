"""The rotary references, tolerances and apply inputs: their properties, an independent complex-number
formulation of apply, and the one `check` path: an honest float32 implementation passes every case,
each classic mistake fails."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import checks, kinds
from harness.core.kinds.rotary import (RotarySpec, apply_reference, cache_reference, cache_tolerance,
                                       exact_cache_tolerance)
from harness.core.kinds.rotary.apply import apply_inputs, round_to_bfloat16
from harness.core.kinds.rotary.apply import q_heads as apply_q_heads
from harness.core.kinds.rotary.cases import rotary_cases
from harness.core.registry import Implementation
from harness.core.tolerance import eps

KIND = kinds.named("rotary")
CASES = rotary_cases()
YARN = RotarySpec(300, 64, rope_type="yarn", factor=4.0, original_max_position_embeddings=64)


# -- the references -----------------------------------------------------------------------------
@pytest.mark.parametrize("spec", [RotarySpec(50, 8), RotarySpec(50, 8, layout="interleaved", offset=3), YARN])
def test_cache_is_a_scaled_unit_circle_starting_at_angle_zero(spec):
    cos, sin = cache_reference(spec)
    assert cos.shape == sin.shape == (spec.length, spec.rot) and cos.dtype == np.float64
    np.testing.assert_allclose(cos**2 + sin**2, spec.attention_scaling**2, rtol=1e-14)
    if spec.offset == 0:
        np.testing.assert_allclose(cos[0], spec.attention_scaling)
        np.testing.assert_array_equal(sin[0], 0.0)


def test_half_repeats_its_block_and_interleaved_its_neighbour():
    half = cache_reference(RotarySpec(20, 12, rotary_dim=8))
    np.testing.assert_array_equal(half[:, :, :4], half[:, :, 4:])
    pairs = cache_reference(RotarySpec(20, 12, rotary_dim=8, layout="interleaved"))
    np.testing.assert_array_equal(pairs[:, :, 0::2], pairs[:, :, 1::2])
    np.testing.assert_array_equal(pairs[:, :, 0::2], half[:, :, :4])


def _complex_rotation(spec: RotarySpec, x: np.ndarray, position_ids: np.ndarray) -> np.ndarray:
    """Apply written as complex multiplication: the pair (a, b) is a + ib, times e^(i theta);
    x heads first in the result whatever its layout, ids `[seq]` or `[batch, seq]`."""
    n, rot = spec.n_freq, spec.rot
    x = np.moveaxis(x, 2, 1) if spec.qk_layout == "bshd" else x
    a, b = (x[..., :n], x[..., n:rot]) if spec.layout == "half" else (x[..., 0:rot:2], x[..., 1:rot:2])
    theta = position_ids[..., None].astype(np.float64) * spec.inv_freq()
    theta = theta[:, None] if theta.ndim == 3 else theta      # one row of angles per sequence
    z = (a + 1j * b) * np.exp(1j * theta) * spec.attention_scaling
    out = np.array(x, dtype=np.float64)
    if spec.layout == "half":
        out[..., :n], out[..., n:rot] = z.real, z.imag
    else:
        out[..., 0:rot:2], out[..., 1:rot:2] = z.real, z.imag
    return out


@pytest.mark.parametrize("spec", [c for c in CASES if c.length * c.head_dim <= 1 << 16][::2],
                         ids=lambda s: s.short())
def test_apply_reference_is_complex_multiplication(spec):
    q, k, position_ids = apply_inputs(spec, batch=2, heads=3)
    got = apply_reference(spec, q, k, position_ids)
    q_heads = apply_q_heads(spec, 3)       # GQA: a multiple of k's heads, at least twice them
    assert got.shape == (2, 2, q_heads, spec.length, spec.head_dim)
    for which, x in enumerate((q, k)):
        want = _complex_rotation(spec, x.astype(np.float64), position_ids)
        want = np.repeat(want, q_heads // want.shape[1], axis=1)    # k's heads serve q's groups
        np.testing.assert_allclose(got[which], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got[which][..., spec.rot:], want[..., spec.rot:])   # passed through


# -- the tolerances -----------------------------------------------------------------------------
def test_cache_tolerance_grows_with_the_angle_and_the_scale():
    spec = RotarySpec(1000, 8)
    tol = cache_tolerance(spec)
    assert tol.shape == (2, 1000, 8) and np.all(tol > 0)
    assert np.all(np.diff(tol[0, :, 0]) > 0)                # column 0 turns 1 rad per position
    assert tol[0, 0, 0] == pytest.approx(4 * eps("float32"))
    assert exact_cache_tolerance(spec.replace(dtype="float64")).max() < 1e-11   # float64 angles
    assert cache_tolerance(spec.replace(dtype="float64")).max() < 1e-3            # float32 angles
    unscaled = RotarySpec(300, 64, rope_type="yarn", factor=4.0, original_max_position_embeddings=64,
                          attention_factor=1.0)
    np.testing.assert_allclose(cache_tolerance(YARN), cache_tolerance(unscaled) * YARN.attention_scaling)


def test_apply_tolerance_is_positive_and_tight_where_nothing_rotates():
    spec = RotarySpec(40, 16, rotary_dim=4, dtype="float16")
    work = KIND.workload("apply")
    args = work.arguments(spec, 2, 2)
    expected, allowed = work.expected(spec, args, cache_reference(spec), cache_tolerance(spec))
    assert expected.shape == allowed.shape == (2, 2, 2, 40, 16) and np.all(allowed > 0)
    assert np.all(allowed[..., 4:] == np.finfo(np.float64).tiny)   # the tail must come back untouched


# -- the apply inputs ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_apply_inputs_are_representable_and_deterministic(dtype):
    spec = RotarySpec(100, 8, offset=7, dtype=dtype)
    q, k, position_ids = apply_inputs(spec, 2, 3)
    assert q.dtype == (np.float64 if dtype == "float64" else np.float32) and q.shape == (2, 3, 100, 8)
    assert position_ids.dtype == np.int64
    assert sorted(position_ids) == list(range(7, 107)) and list(position_ids) != sorted(position_ids)
    if dtype == "float16":
        np.testing.assert_array_equal(q.astype(np.float16).astype(np.float32), q)
    if dtype == "bfloat16":
        np.testing.assert_array_equal(round_to_bfloat16(q), q)
        assert np.all(q.view(np.uint32) & 0xFFFF == 0)
    for a, b in zip(apply_inputs(spec, 2, 3), (q, k, position_ids)):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(q, k)


def test_bfloat16_rounding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32) * 100
    x[:3] = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)]       # ties go to even
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(round_to_bfloat16(x), want)


# -- the one check path ------------------------------------------------------------------------
def _out_dtype(dtype: str):
    if dtype == "bfloat16":
        return pytest.importorskip("ml_dtypes").bfloat16
    return np.dtype(dtype)


def _cache(spec, *, layout=None, shift=0, scale=True, freqs=None):
    """A cache as a model builds it: angles in float32 (float64 for float64), then cast."""
    work = np.float64 if spec.dtype == "float64" else np.float32
    inv = (spec.inv_freq() if freqs is None else freqs).astype(work)
    n = spec.n_freq
    col = np.arange(spec.rot)
    col = col % n if (layout or spec.layout) == "half" else col // 2
    theta = np.arange(spec.offset + shift, spec.offset + shift + spec.length, dtype=work)[:, None] * inv[col]
    factor = work(spec.attention_scaling if scale else 1.0)
    return np.cos(theta) * factor, np.sin(theta) * factor


def _rotate(spec, x, cos, sin):
    work = cos.dtype
    x = x.astype(work)
    n, rot = spec.n_freq, spec.rot
    head = x[..., :rot]
    if spec.layout == "half":
        turned = np.concatenate([-head[..., n:], head[..., :n]], axis=-1)
    else:
        turned = np.stack([-head[..., 1::2], head[..., 0::2]], axis=-1).reshape(head.shape)
    return np.concatenate([head * cos + turned * sin, x[..., rot:]], axis=-1)


def cache_impl(**mistake):
    def build(spec):
        def call():
            cos, sin = _cache(spec, **mistake)
            return cos.astype(_out_dtype(spec.dtype)), sin.astype(_out_dtype(spec.dtype))
        return call
    return Implementation("test-cache", "numpy", "cpu", build, lambda spec: None, workload="cache",
                          kind="rotary")


def apply_impl(by_row=False, sign=1.0):
    def build(spec, q, k, position_ids):
        cos, sin = _cache(spec)
        rows = np.arange(spec.length) if by_row else position_ids - spec.offset
        cos, sin = cos[rows], sign * sin[rows]

        def call():
            out = _out_dtype(spec.dtype)
            return _rotate(spec, q, cos, sin).astype(out), _rotate(spec, k, cos, sin).astype(out)
        return call
    return Implementation("test-apply", "numpy", "cpu", build, lambda spec: None, workload="apply",
                          kind="rotary")


@pytest.mark.parametrize("spec", CASES, ids=lambda s: s.short())
def test_an_honest_float32_implementation_passes_every_case(spec):
    for impl in (cache_impl(), apply_impl()):
        if impl.supports(spec):      # apply's other forms: tests/test_rotary_forms.py
            continue
        result = checks.check(impl, spec)
        assert result.status == "pass", (impl.workload, result.reason)
        assert result.err_ratio < 0.5


FAILS = [
    ("the other layout", cache_impl(layout="interleaved"), RotarySpec(300, 64)),
    ("the other layout", cache_impl(layout="half"), RotarySpec(300, 64, layout="interleaved")),
    ("offset ignored by one", cache_impl(shift=1), RotarySpec(300, 64, offset=5)),
    ("no attention scaling", cache_impl(scale=False), YARN),
    ("scaling not applied", cache_impl(freqs=RotarySpec(300, 64).inv_freq()), YARN),
    ("cache rows, not positions", apply_impl(by_row=True), RotarySpec(300, 64, offset=2)),
    ("turned the wrong way", apply_impl(sign=-1.0), RotarySpec(300, 64, rotary_dim=16)),
]


@pytest.mark.parametrize("why, impl, spec", FAILS, ids=[f[0] for f in FAILS])
def test_classic_mistakes_fail(why, impl, spec):
    for dtype in ("bfloat16", "float32"):
        result = checks.check(impl, spec.replace(dtype=dtype))
        assert result.status == "fail", (why, dtype, result.reason)
        assert result.err_ratio > 2
