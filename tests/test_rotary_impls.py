"""The rotary implementations on the edges test_implementations' case matrix does not single out.

Everything is judged by `check` (verify's path) or by `compare` against the kind's own reference
and tolerance; the edges: the dims past rotary_dim pass through bit for bit, the two layouts
place frequencies differently, positions in any order (repeats too), every rope_type, the three
apply variants agreeing, and the fast caches staying accurate at 131 072 positions.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import implementations, to_numpy
from harness.core import handover, inplace
from harness.core.checks import check, compare
from harness.core.kinds.rotary import RotarySpec, cache_reference, cache_tolerance
from harness.core.kinds.rotary.apply import apply_expected, apply_inputs
from harness.core.kinds.rotary.spec import ROPE_TYPES
from harness.core.tolerance import eps

#: This suite's own implementations (impls/rotary/*.py); library conventions are tested with theirs.
OURS = [i for i in implementations() if i.origin.startswith("harness.impls.rotary.")]
ROTARY = {i.name: i for i in OURS if i.available}
CACHES = sorted(name for name, i in ROTARY.items() if i.workload == "cache")
APPLIES = sorted(name for name, i in ROTARY.items() if i.workload == "apply")
FAST_CACHES = [n for n in ("rotary-numpy-cache-fast", "rotary-torch-cache-fast",
                           "rotary-torch-cache-recycled", "rotary-tf-cache-fast",
                           "rotary-numba-cache", "rotary-numba-cache-recycled") if n in ROTARY]
#: Each backend's apply variants: the fused and cached ones must agree with the unfused.
VARIANTS = {backend: [n for n in APPLIES if n.startswith(f"rotary-{backend}-apply-")]
            for backend in ("numba", "torch")}

#: A small spec of each rope_type with the scaling fields it needs.
SCALED = {
    "default": {},
    "linear": dict(factor=2.0),
    "dynamic": dict(factor=2.0, max_position_embeddings=32),
    "yarn": dict(factor=8.0, original_max_position_embeddings=16),
    "llama3": dict(factor=8.0, original_max_position_embeddings=64, base=500000.0),
    "longrope": dict(factor=4.0, original_max_position_embeddings=32,
                     short_factor=(1.0, 1.2, 1.5, 2.0), long_factor=(1.0, 2.0, 4.0, 8.0)),
}


def _callable(name: str, spec: RotarySpec, *args):
    """The zero-argument call verify makes (an in-place kernel's: fresh inputs, then the call)."""
    impl = ROTARY[name]
    fn = handover.bound(impl, spec, args)
    assert callable(fn) and not isinstance(fn, inplace.InPlace), fn
    return fn


def _apply(name: str, spec: RotarySpec, q, k, positions) -> tuple[np.ndarray, np.ndarray]:
    out_q, out_k = _callable(name, spec, q, k, positions)()
    return to_numpy(out_q), to_numpy(out_k)


def _judged(name: str, spec: RotarySpec, q, k, positions):
    """compare() of one apply on these inputs against the kind's reference and tolerance."""
    args = (q, k, positions)
    expected, allowed = apply_expected(spec, args, cache_reference(spec), cache_tolerance(spec))
    return compare(_callable(name, spec, *args)(), expected, allowed, spec.dtype, ("q", "k"))


def test_every_backend_has_its_variants():
    """Unavailable backends aside, the names promise what exists."""
    want = {"numpy": ("cache", "cache-fast", "apply-unfused"), "torch": ("cache", "cache-fast",
            "apply-unfused", "apply-fused", "apply-cached"), "numba": ("cache", "apply-unfused",
            "apply-fused", "apply-cached"), "tf": ("cache", "cache-fast", "apply-unfused"),
            "python": ("cache", "apply")}
    registered = {i.name for i in OURS}
    missing = [f"rotary-{b}-{v}" for b, vs in want.items() for v in vs if f"rotary-{b}-{v}" not in registered]
    assert not missing
    assert {n.replace("-cuda-", "-") for n in registered if "-cuda-" in n} <= {
        n for n in registered if n.startswith("rotary-torch-")}


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("name", APPLIES)
def test_partial_rotary_passes_the_tail_bit_exactly(name, layout):
    spec = RotarySpec(12, 24, rotary_dim=8, layout=layout, offset=3)
    q, k, positions = apply_inputs(spec)
    out_q, out_k = _apply(name, spec, q, k, positions)
    np.testing.assert_array_equal(out_q[..., 8:], q[..., 8:])
    np.testing.assert_array_equal(out_k[..., 8:], k[..., 8:])
    assert not np.array_equal(out_q[..., :8], q[..., :8])   # while the head did rotate


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("name", CACHES)
def test_layouts_place_each_frequency_twice_where_they_say(name, dtype):
    half = RotarySpec(20, 16, offset=5, dtype=dtype)
    interleaved = half.replace(layout="interleaved")
    if ROTARY[name].supports(half):
        pytest.skip(ROTARY[name].supports(half))
    for spec in (half, interleaved):
        assert check(ROTARY[name], spec).status == "pass"
    cos_h, sin_h = (to_numpy(x) for x in ROTARY[name].build(half)())
    cos_i, sin_i = (to_numpy(x) for x in ROTARY[name].build(interleaved)())
    np.testing.assert_array_equal(cos_h[:, :8], cos_h[:, 8:])
    np.testing.assert_array_equal(sin_i[:, ::2], sin_i[:, 1::2])
    np.testing.assert_array_equal(cos_h[:, :8], cos_i[:, ::2])     # same frequencies, other places
    assert not np.allclose(cos_h, cos_i) and not np.allclose(sin_h, sin_i)


@pytest.mark.parametrize("name", APPLIES)
def test_positions_in_any_order_with_repeats(name):
    spec = RotarySpec(16, 8, layout="interleaved", offset=100)
    q, k, _ = apply_inputs(spec)
    rng = np.random.default_rng(7)
    for positions in (np.arange(115, 99, -1), rng.integers(100, 116, size=16), np.full(16, 115)):
        judged = _judged(name, spec, q, k, positions.astype(np.int64))
        assert judged.reason is None, (positions, judged.reason)


@pytest.mark.parametrize("rope_type", ROPE_TYPES)
@pytest.mark.parametrize("name", sorted(ROTARY))
def test_every_rope_type(name, rope_type):
    dtypes = getattr(ROTARY[name].supports_fn, "dtypes", ("float32",))
    dtype = "float32" if "float32" in dtypes else dtypes[0]   # a one-dtype design in its own
    spec = RotarySpec(48, 8, offset=10, rope_type=rope_type, dtype=dtype, **SCALED[rope_type])
    result = check(ROTARY[name], spec)
    assert result.status == "pass", result.reason


@pytest.mark.parametrize("backend", sorted(VARIANTS))
def test_fused_and_cached_agree_with_unfused(backend):
    names = VARIANTS[backend]
    assert len(names) >= 3, names
    names.sort(key=lambda n: not n.endswith("-unfused"))   # the unfused one first
    for spec in (RotarySpec(40, 24, rotary_dim=16, offset=9, rope_type="yarn", factor=4.0,
                            original_max_position_embeddings=16),
                 RotarySpec(40, 16, layout="interleaved", base=500.0, dtype="float64")):
        args = apply_inputs(spec, batch=3, heads=2)
        _, allowed = apply_expected(spec, args, cache_reference(spec), cache_tolerance(spec))
        unfused, *others = (np.stack(_apply(n, spec, *args)) for n in names)
        for other in others:   # each may be off the truth by its tolerance, in opposite directions
            assert np.all(np.abs(other - unfused) <= 2 * allowed)
            assert np.abs(other - unfused).max() < 16 * eps(spec.dtype) * np.abs(unfused).max()


@pytest.mark.parametrize("name", [n for n in APPLIES if "-python-" not in n])
def test_apply_leaves_its_inputs_alone(name):
    """q and k are the next call's inputs: rotating them in place would compound each call."""
    spec = RotarySpec(32, 16, offset=2)
    q, k, positions = apply_inputs(spec)
    saved = q.copy(), k.copy(), positions.copy()
    fn = _callable(name, spec, q, k, positions)
    first = np.stack([to_numpy(x) for x in fn()])
    second = np.stack([to_numpy(x) for x in fn()])
    for before, after in zip(saved, (q, k, positions)):
        np.testing.assert_array_equal(before, after)
    np.testing.assert_array_equal(first, second)


def _address(x) -> int:
    """Where a result's memory starts: a NumPy array's or a torch tensor's."""
    return x.data_ptr() if hasattr(x, "data_ptr") else x.ctypes.data


@pytest.mark.parametrize("name", [n for n in sorted(ROTARY) if n.endswith("-recycled")])
def test_recycled_outputs_are_fresh_while_held_and_reused_once_let_go(name):
    """A recycled result is never memory the caller still holds, and is the same memory again
    once the caller lets go (what spares the page faults)."""
    spec = RotarySpec(40, 16, offset=3)
    fn = handover.bound(ROTARY[name], spec,
                        apply_inputs(spec) if ROTARY[name].workload == "apply" else ())
    first = fn()
    address = _address(first[0])
    second = fn()
    assert _address(second[0]) != address
    np.testing.assert_array_equal(*(np.stack([to_numpy(x) for x in out]) for out in (first, second)))
    del first, second
    assert _address(fn()[0]) == address   # the first kept buffer is idle again


@pytest.mark.parametrize("name", FAST_CACHES)
def test_fast_caches_are_accurate_at_a_long_context(name):
    """131 072 positions in float32: a pass, and a few ulps absolute at every position (model code's
    float32 angles are off by |theta| ulps there), including where a large offset starts."""
    for spec in (RotarySpec(131_072, 16, base=500000.0), RotarySpec(1024, 16, offset=1 << 24)):
        result = check(ROTARY[name], spec)
        assert result.status == "pass", result.reason
        assert result.max_abs_err <= 4 * eps("float32"), result


def test_fast_cache_beats_model_code_far_out():
    """The point of the fast design: at 131 072 positions model code's error is orders larger."""
    spec = RotarySpec(131_072, 16)
    fast, model = (check(ROTARY[n], spec) for n in ("rotary-numpy-cache-fast", "rotary-numpy-cache"))
    assert fast.status == model.status == "pass"
    assert model.max_abs_err > 100 * fast.max_abs_err


@pytest.mark.parametrize(("name", "spec", "why"), [
    ("rotary-numpy-cache", RotarySpec(4, 4, dtype="bfloat16"), "bfloat16"),
    ("rotary-python-apply", RotarySpec(4096, 128), "too big for pure Python"),
])
def test_supports_says_why_not(name, spec, why):
    impl = next(i for i in implementations() if i.name == name)
    reason = impl.supports(spec)
    assert reason and why in reason
    assert impl.supports(spec.replace(dtype="float32", length=4, head_dim=4)) is None
