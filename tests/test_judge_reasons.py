"""What a verdict says beyond pass and fail (issue 26): a required grade, where a reason points
(the first position beyond the tolerance, the worst one), and a result that must follow other
inputs at every call."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.core import checks, contract
from harness.core.observe import Observation, snapshot
from tests.test_judge_verdicts import SPEC, impl_of


@pytest.mark.parametrize("got, required, meets", [
    ("exact", "exact", True), ("exact", "float32", True), ("float32", "float32", True),
    ("float32", "exact", False), ("fail", "float32", False), ("fail", "exact", False),
    ("", "float32", False), ("pass", "float32", False),
])
def test_a_required_grade_is_met_by_it_or_a_better_one(got, required, meets):
    assert contract.at_least(got, required) is meets


@pytest.mark.parametrize("required", ["fail", "float16", ""])
def test_a_required_grade_must_be_a_contract(required):
    with pytest.raises(ValueError, match=r"^require must be one of \('exact', 'float32'\), got"):
        contract.at_least("exact", required)


# -- a failing reason says where the errors begin when that is not where they are worst ----

def errors_from(shape, first_bad: int, worst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(got, expected, allowed): within tolerance before row `first_bad`, 2x it from there,
    3x at row `worst` (rows are the second-to-last axis)."""
    expected, allowed = np.zeros(shape), np.ones(shape)
    got = np.zeros(shape)
    got[..., first_bad:, :] = 2.0
    got[..., worst, :] = 3.0
    got[..., :first_bad, :] = 0.5
    return got, expected, allowed


@pytest.mark.parametrize("shape", [(40, 6), (2, 40, 6), (2, 3, 40, 6)])
def test_the_reason_names_the_first_position_beyond_the_tolerance(shape):
    got, expected, allowed = errors_from(shape, first_bad=10, worst=30)
    result = checks.error_ratio(got, expected, allowed)
    assert result.reason.endswith("at position 30, column 0 (first beyond its tolerance at "
                                  "position 10)"), result.reason


def test_where_the_first_is_the_worst_nothing_is_added():
    got, expected, allowed = errors_from((40, 6), first_bad=30, worst=30)
    assert checks.error_ratio(got, expected, allowed).reason.endswith("at position 30, column 0")
    assert checks.error_ratio(got[0, :], expected[0, :], allowed[0, :]).reason is None


def test_a_one_dimensional_result_names_its_worst_element_only():
    got, expected, allowed = np.array([0.0, 2.0, 3.0]), np.zeros(3), np.ones(3)
    assert checks.error_ratio(got, expected, allowed).reason == \
        "error 3 > tolerance 1 at position 2, column -1"


def test_an_error_exactly_at_the_bound_is_within_it():
    one = np.ones((2, 2))
    assert checks.error_ratio(0.5 * one, 0 * one, 0.5 * one).reason is None
    assert checks.error_ratio(0.5 * one, 0 * one, 0.5 * one).err_ratio == 1.0
    assert contract.grade(0.5 * one, 0.5 * one, 0.5 * one) == "exact"
    assert contract.grade(0.5 * one, 0.5 * one, 0.25 * one) == "float32"
    assert contract.grade(0.5 * one, 0.25 * one, 0.25 * one) == "fail"
    assert contract.grade(0.5 * one, 0.5 * one, None) == "float32"


# -- a workload with inputs: each result judged by the inputs it was given (handover) ---------

def forward_results():
    """(want(variant), the right result for input set n as a Returned) for a forward on SPEC."""
    from harness.core import handover
    args = checks.inputs("forward", SPEC)
    wants = {n: checks.expect("forward", SPEC, handover.variant(args, n)) for n in range(3)}
    right = {n: snapshot(w.expected.astype(np.float32)) for n, w in wants.items()}
    return (lambda variant=0: wants[variant]), right


@pytest.mark.parametrize("at_call", [True, False])
def test_a_result_for_other_inputs_must_follow_them(at_call):
    """Call time: calls 1-3 get input sets 0, 1, 2; build time: three calls on set 0, then one
    after its inputs were negated in place (set 1). Right for each set passes; the first set's
    answer where another was given fails, saying which inputs it was given."""
    want, right = forward_results()
    variants = (0, 1, 2) if at_call else (0, 0, 0, 1)
    results = tuple(right[v] for v in variants)
    seen = Observation(results=results, poisoned=(True, True, False), variants=variants,
                       at_call=at_call)
    assert checks.judge(impl_of(None), SPEC, seen, want).status == "pass"
    stale = tuple(right[0] for _ in variants)
    result = checks.judge(impl_of(None), SPEC, dataclasses.replace(seen, results=stale), want)
    expected_start = ("given its inputs negated: " if at_call else
                      "its inputs negated in place after it was built: ")
    assert result.status == "fail" and result.reason.startswith(expected_start), result.reason
    if at_call:     # the third set alone wrong: named as the reversed inputs
        third = dataclasses.replace(seen, results=(right[0], right[1], right[0]))
        reason = checks.judge(impl_of(None), SPEC, third, want).reason
        assert reason.startswith("given its inputs reversed along the last axis"), reason


def test_a_result_with_inputs_but_none_for_changed_inputs_is_an_error():
    """An observation that claims no call on other inputs (a cut-short or forged one) never
    passes: the judge asks for one."""
    want, right = forward_results()
    seen = Observation(results=(right[0], right[0]), poisoned=(False, False), variants=(0, 0))
    result = checks.judge(impl_of(None), SPEC, seen, want)
    assert (result.status, result.reason) == ("error", "returned no result for its inputs changed")
    broke = dataclasses.replace(seen, error="RuntimeError: no", failed_call=3)
    assert checks.judge(impl_of(None), SPEC, broke, want).reason == "RuntimeError: no"
