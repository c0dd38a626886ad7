"""Rotary apply in the forms real kernels take: the declaration (`ApplyForms`), the cases it
admits, in-place kernels (`InPlace`), and wrong declarations as failed cases, never errors."""

from __future__ import annotations

import numpy as np
import pytest

from harness import ApplyForms, InPlace, RotarySpec, implementations
from harness.core import checks, kinds
from harness.core.kinds.rotary import apply_reference
from harness.core.kinds.rotary.apply import apply_inputs
from harness.core.kinds.rotary.cases import rotary_cases
from harness.core.kinds.rotary.forms import is_apply_form
from harness.core.registry import Implementation, Registry

APPLY = kinds.named("rotary").workload("apply")
EVERY = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True)
GQA = RotarySpec(40, 16, kv_heads=1, position_ids="batch", qk_layout="bshd", offset=5)


def _rotate(spec, x, ids, layout=None, skip_k=False):
    """Honest NumPy apply in float64 of x in `layout` (the spec's by default) at ids."""
    layout = layout or spec.qk_layout
    x = np.asarray(x, np.float64)
    xh = np.swapaxes(x, 1, 2) if layout == "bshd" else x
    theta = np.asarray(ids, np.float64)[..., None] * spec.inv_freq()
    theta = theta[:, None] if theta.ndim == 3 else theta
    cos, sin = np.cos(theta) * spec.attention_scaling, np.sin(theta) * spec.attention_scaling
    n, rot = spec.n_freq, spec.rot
    first, second = (slice(0, n), slice(n, rot)) if spec.layout == "half" else (slice(0, rot, 2), slice(1, rot, 2))
    out = xh.copy()
    out[..., first] = xh[..., first] * cos - xh[..., second] * sin
    out[..., second] = xh[..., second] * cos + xh[..., first] * sin
    return np.swapaxes(out, 1, 2) if layout == "bshd" else out


def numpy_apply(forms=EVERY, mistake=""):
    """An honest NumPy apply (float64, rounded once) taking `forms`, or one with a `mistake`."""
    def build(spec, q, k, ids):
        out = np.dtype(spec.dtype)

        def call():
            rows = ids[0] if mistake == "first sequence's ids" and ids.ndim == 2 else ids
            rows = np.broadcast_to(rows, ids.shape)
            rq = _rotate(spec, q, rows)
            rk = k.astype(np.float64) if mistake == "k unrotated" else _rotate(spec, k, rows)
            if mistake == "writes into q":
                q[...] = rq
            if mistake == "hands back bhsd":
                rq, rk = np.swapaxes(rq, 1, 2), np.swapaxes(rk, 1, 2)
            return rq.astype(out), rk.astype(out)
        return call
    return Implementation("numpy-forms", "numpy", "cpu", build, lambda spec: None, workload="apply",
                          kind="rotary", forms=forms)


def in_place(declare=True, hand_back="InPlace"):
    """An honest in-place apply: it owns copies of q and k and rotates them where they are."""
    def build(spec, q, k, ids):
        out = np.dtype(spec.dtype)
        q0, k0 = q.astype(out), k.astype(out)
        qx, kx = q0.copy(), k0.copy()

        def reset():
            qx[...], kx[...] = q0, k0

        def call():
            qx[...] = _rotate(spec, qx, ids)
            kx[...] = _rotate(spec, kx, ids)
            return qx, kx
        return InPlace(reset, call) if hand_back == "InPlace" else lambda: (reset(), call())[1]
    forms = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True, in_place=declare)
    return Implementation("numpy-in-place", "numpy", "cpu", build, lambda spec: None, workload="apply",
                          kind="rotary", forms=forms)


def in_place_at_call():
    """An honest in-place apply handed q and k at every call: it rotates them where they lie."""
    def build(spec):
        def call(q, k, ids):
            q[...] = _rotate(spec, q, ids)
            k[...] = _rotate(spec, k, ids)
            return q, k
        return call
    forms = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True, in_place=True)
    return Implementation("numpy-in-place-at-call", "numpy", "cpu", build, lambda spec: None,
                          workload="apply", kind="rotary", forms=forms)


FORM_CASES = [s for s in rotary_cases() if is_apply_form(s) and s.dtype != "bfloat16"]


@pytest.mark.parametrize("spec", FORM_CASES, ids=lambda s: s.short())
def test_honest_kernels_pass_every_form_in_place_or_not(spec):
    for impl in (numpy_apply(), in_place_at_call()):
        result = checks.check(impl, spec)
        assert result.status == "pass", (impl.name, result.reason)
        assert result.grade == "exact"


#: Built-in kernels declaring every form, in place or not (the numba ones exact; their cached
#: and unfused variants share the kernel and meet every case in test_implementations).
FORM_KERNELS = ("rotary-torch-apply-forms", "rotary-torch-apply-inplace", "rotary-numba-apply-fused",
                "rotary-numba-apply-inplace")


def test_the_built_in_form_kernels_pass_every_form_in_every_dtype():
    impls = [i for i in implementations() if i.name in FORM_KERNELS and i.available]
    assert len(impls) >= 2 and all(i.forms_declared.gqa for i in impls)
    cases = [s for s in rotary_cases(quick=True) if is_apply_form(s)]
    cases += [s.replace(layout="interleaved") for s in cases if s.dtype == "float32"]
    assert {s.dtype for s in cases} == {"float16", "bfloat16", "float32", "float64"}
    for spec in cases:          # case-major: each case's reference is computed once (checks keeps it)
        for impl in impls:
            result = checks.check(impl, spec)
            assert result.status == "pass", (impl.name, spec.short(), result.reason)
            assert result.grade == "exact" or impl.backend != "numba", (impl.name, spec.short())


def test_a_form_not_declared_is_a_skip_naming_the_declaration():
    original = numpy_apply(forms=None)
    for spec, word in ((GQA.replace(kv_heads=None, position_ids="seq"), "layout bshd"),
                       (GQA.replace(qk_layout="bhsd", position_ids="seq"), "gqa=False"),
                       (GQA.replace(qk_layout="bhsd", kv_heads=None), "batch_positions=False")):
        result = checks.check(original, spec)
        assert result.status == "skip" and word in result.reason, result.reason
    cache = next(i for i in implementations() if i.name == "rotary-numpy-cache")
    assert "cache is the same for every form" in cache.supports(GQA)


@pytest.mark.parametrize("mistake, words", [
    ("hands back bhsd", "expected (2, 40, 4, 16) (this case: q and k bshd"),
    ("k unrotated", "k: error"),
    ("first sequence's ids", "position ids [batch, seq]"),
    ("writes into q", "wrote into its input(s) q"),
])
def test_wrong_declarations_and_shipped_bugs_fail_with_a_reason(mistake, words):
    spec = GQA.replace(kv_heads=2) if mistake != "k unrotated" else GQA
    result = checks.check(numpy_apply(mistake=mistake), spec)
    assert result.status == "fail" and words in result.reason, result.reason


@pytest.mark.parametrize("declare, hand_back, words", [
    (True, "callable", "declared in_place, but its factory returned function"),
    (False, "InPlace", "did not declare in_place=True"),
])
def test_an_in_place_declaration_must_match_what_the_factory_returns(declare, hand_back, words):
    result = checks.check(in_place(declare, hand_back), GQA)
    assert result.status == "fail" and words in result.reason, result.reason


def test_an_in_place_kernel_without_fresh_inputs_would_compound():
    """What `reset` is for: the same honest kernel called twice without it rotates twice."""
    impl = in_place()
    q, k, ids = apply_inputs(GQA, 2, 2)
    kernel = impl.build(GQA, q, k, ids)
    kernel.reset()
    once = np.stack([kernel.call()[0]]).copy()
    twice = kernel.call()[0]
    assert not np.allclose(once[0], twice)
    kernel.reset()
    np.testing.assert_array_equal(kernel.call()[0], once[0])


@pytest.mark.parametrize("bad, words", [
    (lambda ids: ids[0], "shape [2, 40] ([batch, seq])"),
    (lambda ids: ids.astype(np.float32), "integers of shape [2, 40]"),
    (lambda ids: ids + 100, "must lie in 5 .. 44"),
])
def test_position_ids_of_the_wrong_shape_or_dtype_are_refused(bad, words):
    q, k, ids = apply_inputs(GQA, 2, 2)
    with pytest.raises(ValueError, match=r"position_ids") as info:
        apply_reference(GQA, q, k, bad(ids))
    assert words in str(info.value)


def test_batch_position_ids_differ_per_sequence_and_stay_in_the_cache():
    spec = RotarySpec(40, 8, position_ids="batch", offset=7)
    _, _, ids = apply_inputs(spec, 4, 2)
    assert ids.shape == (4, 40) and ids.dtype == np.int64
    assert ids.min() >= 7 and ids.max() <= 46
    assert len({tuple(row) for row in ids}) == 4        # packed, left-padded, shuffles


def test_gqa_gives_k_fewer_heads_than_q_in_the_declared_layout():
    q, k, _ = apply_inputs(GQA, 2, 4)
    assert q.shape == (2, 40, 4, 16) and k.shape == (2, 40, 1, 16)      # bshd
    q, k, _ = apply_inputs(GQA.replace(kv_heads=2, qk_layout="bhsd"), 2, 2)
    assert q.shape == (2, 4, 40, 16) and k.shape == (2, 2, 40, 16)      # at least 2 q heads per k head


@pytest.mark.parametrize("fields, words", [
    (dict(layouts=("bshd", "thd")), "layouts must be"),
    (dict(layouts="bshd"), "layouts must be"),
    (dict(gqa=1), "gqa must be True or False"),
])
def test_apply_forms_are_validated(fields, words):
    with pytest.raises(ValueError, match=words):
        ApplyForms(**fields)


@pytest.mark.parametrize("fields, words", [
    (dict(qk_layout="sbhd"), "qk_layout must be one of"),
    (dict(kv_heads=0), "kv_heads must be None"),
    (dict(position_ids="packed"), "position_ids must be one of"),
])
def test_apply_fields_of_the_spec_are_validated(fields, words):
    with pytest.raises(ValueError, match=words):
        RotarySpec(10, 8, **fields)


def test_forms_are_declared_only_where_a_workload_has_them():
    registry = Registry()
    with pytest.raises(ValueError, match="forms of 'x' must be None"):
        registry.register(name="x", backend="numpy", workload="cache", forms=EVERY)(lambda spec: None)
    with pytest.raises(ValueError, match=r"must be ApplyForms\(...\)"):
        registry.register(name="y", backend="numpy", workload="apply", forms=object())(lambda spec: None)
    registry.register(name="z", backend="numpy", workload="apply", forms=EVERY)(lambda spec: None)
    assert registry.get("z").forms_declared is EVERY


def test_check_callable_takes_the_form_the_spec_asks_for():
    from harness import check_callable

    def user_apply(q, k, ids):
        return tuple(_rotate(GQA, x, ids).astype(np.float32) for x in (q, k))

    result = check_callable(user_apply, GQA, workload="apply")
    assert (result.status, result.grade) == ("pass", "exact"), result.reason
    lazy = check_callable(lambda q, k, ids: (q, k), GQA, workload="apply")
    assert lazy.status == "fail"


class _Pedantic:
    """pytest-benchmark's fixture as far as Rounds uses it: setup before every round, untimed."""

    def __init__(self):
        self.log: list[str] = []

    def pedantic(self, target, setup, rounds, iterations, warmup_rounds):
        for _ in range(rounds + warmup_rounds):
            setup()
            self.log.append("call")
            target()


def test_bench_gives_an_in_place_kernel_fresh_inputs_before_every_round_outside_the_timing():
    from harness.bench import measure, modes

    log: list[str] = []
    rounds = modes.rounds_for("", lambda: log.append("rotate"), "numpy", "cpu", 1e-3, 0.01, 3,
                              fresh=lambda: log.append("reset"))
    bench = _Pedantic()
    rounds.run(bench)
    assert rounds.setup is not None and rounds.rounds >= 3
    assert log == ["reset", "rotate"] * (rounds.rounds + 1)      # never two rotations in a row
    kernel = in_place().build(GQA, *apply_inputs(GQA, 2, 2))
    assert measure.timed_call(in_place(), kernel) == (kernel.call, kernel.reset, "")
    _, _, wrong = measure.timed_call(in_place(declare=False), kernel)
    assert "did not declare in_place=True" in wrong
