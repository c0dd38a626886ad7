"""Tuple results (a rotary cache's cos and sin, an apply's q and k): extra, missing and wrong
parts fail, and a part that is cached fails whether or not the others can be poisoned (issue 26).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import ApplyForms, RotarySpec
from harness.core import checks
from tests.judged import SPECS, as_result, judge_here, truth

CACHE = SPECS["cache"]("float32")


def cache_parts() -> tuple[np.ndarray, np.ndarray]:
    """A fresh, exact (cos, sin)."""
    expected, _ = truth(CACHE, "cache", ())
    return as_result(expected, "float32", ("cos", "sin"))


def judged(fn, spec=CACHE, workload="cache", forms=None):
    return judge_here(fn, spec, workload, forms)


def test_the_exact_parts_pass():
    assert judged(cache_parts).status == "pass"
    assert judged(lambda: list(cache_parts())).status == "pass"


@pytest.mark.parametrize("shape_it, words", [
    (lambda cos, sin: (cos, sin, sin.copy()), "3 items"),            # more parts than expected
    (lambda cos, sin: (cos, sin, None), "3 items"),
    (lambda cos, sin: (cos,), "1 items"),                             # a part missing
    (lambda cos, sin: (), "0 items"),
    (lambda cos, sin: np.stack([cos, sin]), "expected a tuple"),               # not a tuple
    (lambda cos, sin: {"cos": cos, "sin": sin}, "expected a tuple"),
    (lambda cos, sin: (sin, cos), "cos: error"),                      # parts swapped
    (lambda cos, sin: (cos, sin[:-1]), "sin: shape"),
    (lambda cos, sin: (cos, sin.astype(np.float64)), "sin: dtype float64"),
    (lambda cos, sin: (cos, None), "sin: returned None"),
    (lambda cos, sin: None, "returned None, expected a tuple (cos, sin)"),
])
def test_extra_missing_or_wrong_parts_fail(shape_it, words):
    result = judged(lambda: shape_it(*cache_parts()))
    assert result.status == "fail" and words in result.reason, result.reason


def test_extra_parts_of_an_apply_fail_too():
    spec = SPECS["apply"]("float32")

    def apply(*inputs):
        expected, _ = truth(spec, "apply", inputs)
        q, k = as_result(expected, "float32", ("q", "k"))
        return q, k, k.copy()

    result = judged(apply, spec, "apply")
    assert result.status == "fail" and "3 items" in result.reason, result.reason


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def part_cached(which: int, cached_writable: bool, other_writable: bool):
    """One part computed once and returned every call, the other fresh each call."""
    kept = cache_parts()[which]
    if not cached_writable:
        read_only(kept)

    def call():
        fresh = cache_parts()[1 - which]
        if not other_writable:
            read_only(fresh)
        return (kept, fresh) if which == 0 else (fresh, kept)
    return call


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("cached_writable, other_writable", [
    (True, True),     # both poisoned: the cached part comes back as NaN
    (True, False),    # the other cannot be poisoned: the cached part must not come back
    (False, True),    # the cached part cannot be poisoned
    (False, False),
])
def test_one_cached_part_fails_however_the_others_can_be_poisoned(which, cached_writable,
                                                                  other_writable):
    result = judged(part_cached(which, cached_writable, other_writable))
    assert result.status == "fail", result.reason
    assert "cached result" in result.reason, result.reason


def test_a_cached_part_behind_a_new_read_only_view_each_call_fails():
    kept = cache_parts()[1]

    def call():
        return cache_parts()[0], read_only(kept[:])
    result = judged(call)
    assert result.status == "fail" and "same buffer" in result.reason, result.reason


def test_fresh_parts_that_cannot_be_poisoned_pass():
    """An immutable result (a TF or JAX tensor) computed afresh is a builder."""
    result = judged(lambda: tuple(read_only(p) for p in cache_parts()))
    assert result.status == "pass", result.reason


def test_same_buffer_sees_every_part_of_either_result():
    a, b, c = np.zeros(4), np.zeros(4), np.zeros(4)
    assert checks.same_buffer((a, b), (c, b[:2]))
    assert checks.same_buffer((a, b), (b, c))              # a part moved to another place
    assert checks.same_buffer((a,), (c, a))                 # an extra part is not dropped
    assert checks.same_buffer((c, a), (a,))
    assert not checks.same_buffer((a, b), (c, np.zeros(4)))
    assert checks.same_buffer(a, (c, a)) and checks.same_buffer((c, a), a)   # a tuple and not
    assert not checks.same_buffer(a, (c, b)) and not checks.same_buffer((c, b), a)


def given_form(spec, canonical: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q and k as an implementation returns them: in the spec's qk_layout, k with its own heads
    (the canonical form repeats each of k's heads q_heads / kv_heads times)."""
    q, k = canonical[0], canonical[1]
    k = k[:, :: q.shape[1] // (spec.kv_heads or q.shape[1])]
    if spec.qk_layout == "bshd":
        q, k = np.swapaxes(q, 1, 2), np.swapaxes(k, 1, 2)
    return np.ascontiguousarray(q), np.ascontiguousarray(k)


GQA = RotarySpec(12, 12, rotary_dim=8, qk_layout="bshd", kv_heads=1)
GQA_FORMS = ApplyForms(layouts=("bhsd", "bshd"), gqa=True)


def gqa_apply(change=None):
    def apply(*inputs):
        expected, _ = truth(GQA, "apply", inputs)
        q, k = (part.astype(np.float32) for part in given_form(GQA, expected))
        if change is not None:
            change(q, k)
        return q, k
    return apply


def test_apply_in_its_own_layout_with_fewer_k_heads_is_judged_in_that_form():
    assert judged(gqa_apply(), GQA, "apply", GQA_FORMS).status == "pass"


def test_a_dim_past_rotary_dim_must_come_back_unchanged():
    def touch_tail(q, k):
        k[0, 3, 0, 10] += 1e-3          # bshd: batch 0, sequence 3, k's one head, dim 10 >= 8
    result = judged(gqa_apply(touch_tail), GQA, "apply", GQA_FORMS)
    assert result.status == "fail", result.reason
    assert result.reason.startswith("k: error 0.001 > 0 (must come back unchanged) at position 3")
