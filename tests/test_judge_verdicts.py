"""Every way a check ends, and why (issue 26): skips, errors at each call, the poison sequence, and
an observation that is malformed or cut short (what an isolated child may send).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from harness import Spec
from harness.core import checks
from harness.core.observe import Observation, Returned, observe_all, snapshot
from harness.core.registry import Implementation
from tests.adversaries import table as correct_table
from tests.adversaries import writes_twice

SPEC = Spec(40, 8)


def impl_of(build, supports=lambda spec: None, name: str = "x") -> Implementation:
    return Implementation(name=name, backend="numpy", device="cpu", build=build,
                          supports_fn=supports, workload="table")


def judged(build, supports=lambda spec: None) -> checks.Check:
    return checks.check(impl_of(build, supports), SPEC, timeout_s=30.0)


def raising_on(call_number: int):
    """A builder whose `call_number`-th call raises (0: the build itself)."""
    def build(spec):
        if call_number == 0:
            raise RuntimeError("cannot build")
        calls = []

        def call():
            calls.append(1)
            if len(calls) == call_number:
                raise RuntimeError(f"call {call_number} broke")
            return correct_table(spec)
        return call
    return build


@pytest.mark.parametrize("call_number, prefix", [
    (0, "RuntimeError: cannot build"),
    (1, "RuntimeError: call 1 broke"),
    (2, "second call: RuntimeError: call 2 broke"),
    (3, "third call: RuntimeError: call 3 broke"),
])
def test_a_build_or_call_that_raises_is_an_error_naming_the_call(call_number, prefix):
    result = judged(raising_on(call_number))
    assert (result.status, result.reason) == ("error", prefix)
    # a comparison made before the error is kept as evidence
    assert np.isfinite(result.max_abs_err) == (call_number >= 2)


def test_unsupported_and_unavailable_are_skips_with_the_reason():
    result = judged(lambda spec: (lambda: correct_table(spec)), supports=lambda spec: "no concat")
    assert (result.status, result.reason) == ("skip", "no concat")
    assert np.isnan(result.max_abs_err) and result.worst_pos == -1


def test_supports_that_raises_is_an_error():
    def supports(spec):
        raise KeyError("layout")
    result = judged(lambda spec: (lambda: correct_table(spec)), supports=supports)
    assert result.status == "error" and result.reason.startswith("supports: KeyError")


def test_a_call_that_hangs_is_a_timeout_error():
    def build(spec):
        def call():
            time.sleep(5)
        return call
    result = checks.check(impl_of(build), SPEC, timeout_s=0.2)
    assert result.status == "error" and result.reason.startswith("timeout"), result.reason


def test_a_builder_passes_with_its_measures_and_the_time_it_took():
    result = judged(lambda spec: (lambda: correct_table(spec)))
    assert (result.status, result.reason) == ("pass", "")
    assert 0 <= result.err_ratio <= 1 and result.tol > 0 and result.seconds > 0
    assert (result.impl, result.backend, result.device, result.workload) == \
        ("x", "numpy", "cpu", "table")


def test_reused_memory_left_unwritten_fails_on_the_third_call():
    result = judged(writes_twice)
    assert result.status == "fail"
    assert result.reason.startswith("after letting two poisoned results go: ")
    assert result.reason.endswith("(reused memory without writing it)")


def test_an_unpoisonable_fresh_result_passes_and_a_returned_one_fails():
    def fresh(spec):
        def call():
            out = correct_table(spec)
            out.flags.writeable = False
            return out
        return call
    assert judged(fresh).status == "pass"

    def kept(spec):
        out = correct_table(spec)
        out.flags.writeable = False
        return lambda: out
    result = judged(kept)
    assert (result.status, result.reason) == \
        ("fail", "returned the same buffer twice: a cached result, not a builder")


def test_a_second_result_that_is_wrong_fails_as_the_second_call():
    """Not poisonable (so no NaN hint), fresh, but wrong the second time."""
    def build(spec):
        calls = []

        def call():
            calls.append(1)
            out = correct_table(spec) + (0.5 if len(calls) == 2 else 0.0)
            out.flags.writeable = False
            return out
        return call
    result = judged(build)
    assert result.status == "fail" and result.reason.startswith("second call: error ")
    assert "cached result" not in result.reason


# -- what an isolated child may send: the judge trusts nothing it did not check ----------

def want():
    return checks.expect("table", SPEC, ())


def good() -> Returned:
    return snapshot(correct_table(SPEC))


@pytest.mark.parametrize("seen, status, reason", [
    ("not an observation", "error", "its process sent a str, not an observation"),
    (Observation(), "error", "returned no result"),
    (Observation(results=(good(),)), "error", "the second call returned no result"),
    (Observation(results=(good(), good()), poisoned=(True, True)), "error",
     "the third call returned no result"),
    (Observation(results=(good(), good()), poisoned=(True,)), "pass", ""),
    (Observation(results=(good(), good()), poisoned=(False, False), same_buffer=True), "fail",
     "returned the same buffer twice: a cached result, not a builder"),
    (Observation(error="boom", failed_call=1), "error", "boom"),
    (Observation(error="boom", failed_call=2, results=(good(),), poisoned=(True,)), "error",
     "second call: boom"),
    (Observation(error="boom", failed_call=3, results=(good(), good()), poisoned=(True, True)),
     "error", "third call: boom"),
    (Observation(skip="not here"), "skip", "not here"),
])
def test_the_judge_reads_an_observation_strictly(seen, status, reason):
    result = checks.judge(impl_of(None), SPEC, seen, want)
    assert (result.status, result.reason) == (status, reason)


def test_the_judge_computes_the_truth_only_when_there_is_a_result():
    def never():
        raise AssertionError("no result: nothing to compare")
    for seen in (Observation(skip="no"), Observation(error="boom", failed_call=0), Observation()):
        checks.judge(impl_of(None), SPEC, seen, never)


def test_seconds_come_from_the_observation_and_only_as_a_number():
    seen = Observation(results=(good(), good()), poisoned=(False, False), seconds=1.5)
    assert checks.judge(impl_of(None), SPEC, seen, want).seconds == 1.5

    class Odd:
        seconds = "a while"
        skip = "x"
    assert checks.judge(impl_of(None), SPEC, Odd(), want).seconds == 0.0   # not an Observation
    assert checks.judge(impl_of(None), SPEC, "no seconds", want).seconds == 0.0


def test_a_case_decided_before_any_call_is_a_check_of_that_spec():
    result = checks.check(impl_of(lambda spec: None, supports=lambda spec: "not this one"), SPEC)
    assert (result.status, result.reason, result.spec) == ("skip", "not this one", SPEC)



def off(by: float) -> Returned:
    return snapshot(correct_table(SPEC) + by)


def poisoned_copy() -> Returned:
    return snapshot(np.full((SPEC.length, SPEC.d_model), np.nan, np.float32))


CACHED = " (a cached result, not a builder)"
OWN_INPUTS = " (the first call was right: did it write into its own copy of the inputs?)"


@pytest.mark.parametrize("poisoned, second, inputs, prefix, hint", [
    ((True, True), off(0.5), False, "after poisoning the first result: ", ""),
    ((True, False), off(0.5), False, "after poisoning the first result: ", ""),
    ((True, True), poisoned_copy(), False, "after poisoning the first result: ", CACHED),
    ((False, False), poisoned_copy(), False, "second call: ", ""),
    ((False, False), off(0.5), True, "second call: ", OWN_INPUTS),
    ((True, True), poisoned_copy(), True, "after poisoning the first result: ", CACHED),
])
def test_a_wrong_second_result_says_what_was_tried_and_what_it_suggests(poisoned, second, inputs,
                                                                        prefix, hint):
    seen = Observation(results=(good(), second), poisoned=poisoned)
    case = dataclasses.replace(want(), inputs=inputs)
    result = checks.judge(impl_of(None), SPEC, seen, lambda: case)
    assert (result.status, result.reason) == ("fail", prefix + case.compare(second).reason + hint)


def test_a_pass_needs_both_results_poisoned_before_the_third_call():
    seen = Observation(results=(good(), good()), poisoned=(False, True))
    assert checks.judge(impl_of(None), SPEC, seen, want).status == "pass"


def test_each_verdict_carries_the_measures_of_the_result_it_judged():
    first, wrong = good(), off(0.5)
    measures = {name: checks.compare(r, want().expected, want().allowed, "float32").max_abs_err
                for name, r in (("first", first), ("wrong", wrong))}
    cases = [
        (Observation(results=(first, good()), poisoned=(False, False), same_buffer=True), "first"),
        (Observation(results=(first, good()), poisoned=(True, True)), "first"),   # no third
        (Observation(results=(first, good(), wrong), poisoned=(True, True, False)), "wrong"),
        (Observation(results=(first, wrong), poisoned=(True, True)), "wrong"),
    ]
    for seen, which in cases:
        result = checks.judge(impl_of(None), SPEC, seen, want)
        assert result.status in ("fail", "error")
        assert result.max_abs_err == measures[which], (seen.poisoned, result.reason)


def test_a_grade_is_the_worst_contract_every_result_met_and_only_a_pass_has_one():
    shape = (SPEC.length, SPEC.d_model)
    case = dataclasses.replace(want(), expected=good().array.astype(np.float64),
                               allowed=np.full(shape, 1e-3), exact=np.full(shape, 1e-4))
    for second, grade in ((good(), "exact"), (off(5e-4), "float32")):
        seen = Observation(results=(good(), second), poisoned=(False, False))
        assert checks.judge(impl_of(None), SPEC, seen, lambda: case).grade == grade
    grades = {seen.skip or seen.error: checks.judge(impl_of(None), SPEC, seen, want).grade
              for seen in (Observation(skip="no"), Observation(error="boom", failed_call=1))}
    assert grades == {"no": "", "boom": "fail"}


def test_what_a_case_tells_the_judge_about_its_inputs():
    table = checks.expect("table", SPEC, ())
    assert (table.case, table.inputs) == ("", False)
    assert checks.expect("forward", SPEC, checks.inputs("forward", SPEC)).inputs is True
    seen = Observation(results=(off(0.5),), poisoned=(True,))
    assert checks.judge(impl_of(None), SPEC, seen, want).reason == table.compare(off(0.5)).reason


# -- verify's isolated task: after one hang, the rest are not run --------------------------

def test_after_a_call_hangs_the_remaining_cases_are_not_run():
    specs = [Spec(8, 4), Spec(9, 4), Spec(10, 4)]
    calls = []

    def build(spec):
        def call():
            calls.append(spec.length)
            if spec.length == 9:
                time.sleep(5)
            return correct_table(spec)
        return call

    seen = list(observe_all(impl_of(build), [(s, ()) for s in specs], timeout_s=0.3))
    ahead, first, hung, rest = seen
    assert ahead.ahead == (None, None, None)
    assert first.results and not first.error
    assert hung.error.startswith("timeout") and hung.failed_call == 1
    assert (rest.error, rest.failed_call, rest.results) == \
        ("not run: an earlier case timed out", 0, ())
    assert 10 not in calls


def test_after_supports_hangs_no_case_is_run():
    def supports(spec):
        if spec.length == 8:
            time.sleep(5)
    built = []
    seen = list(observe_all(impl_of(lambda spec: built.append(spec) or (lambda: None), supports),
                            [(Spec(8, 4), ()), (Spec(9, 4), ())], timeout_s=0.3))
    ahead, *cases = seen
    assert ahead.ahead[0].error.startswith("supports: timeout")
    assert ahead.ahead[1] == Observation(error="not run: an earlier case timed out", failed_call=0)
    assert cases == list(ahead.ahead) and built == []


def test_an_error_that_is_not_a_hang_does_not_stop_the_rest():
    def build(spec):
        if spec.length == 8:
            raise ValueError("no")
        return lambda: correct_table(spec)
    _, broken, fine = observe_all(impl_of(build), [(Spec(8, 4), ()), (Spec(9, 4), ())], 5.0)
    assert broken.error == "ValueError: no" and len(fine.results) == 3


def test_a_supports_that_hung_on_a_later_case_stops_every_call():
    """Its hung question may have left it stuck: nothing of it is called after that."""
    def supports(spec):
        if spec.length == 8:
            time.sleep(5)
    built = []
    _, first, second = observe_all(impl_of(lambda spec: built.append(spec) or (lambda: None),
                                           supports),
                                   [(Spec(9, 4), ()), (Spec(8, 4), ())], timeout_s=0.3)
    assert (first.error, first.failed_call) == ("not run: an earlier case timed out", 0)
    assert second.error.startswith("supports: timeout") and built == []


def test_an_implementation_that_wrote_its_inputs_fails_naming_them():
    seen = Observation(results=(good(), good()), poisoned=(True, True), wrote_inputs=("q", "k"))
    result = checks.judge(impl_of(None), SPEC, seen, want)
    assert (result.status, result.grade) == ("fail", "fail")
    assert result.reason.startswith("wrote into its input(s) q, k: an out-of-place implementation")
    assert "in_place=True" in result.reason and "harness.InPlace(reset, call)" in result.reason


def test_run_judges_each_implementation_once_when_it_shows_verdicts_as_they_come(monkeypatch):
    """verify shows each implementation's verdicts as it finishes (on_impl_done) and returns
    them all: one judging, not two (a second pass cost verify's parent a few CPU-seconds)."""
    from harness.core import judged as judged_module
    from tests.judged import SPECS, callable_returning

    specs = [SPECS["table"]("float32"), SPECS["table"]("float64")]
    impls = [Implementation(name=f"planted-{i}", backend="python", device="cpu",
                  build=lambda spec: callable_returning(spec, "table", lambda e, a: e),
                  supports_fn=lambda _spec: None, workload="table", kind="table")
             for i in range(2)]
    calls = []
    real = judged_module.judge
    monkeypatch.setattr(judged_module, "judge",
                        lambda *a, **k: calls.append(a[0].name) or real(*a, **k))
    shown = {}
    out = judged_module.run(impls, specs, on_impl_done=lambda i, c: shown.update({i.name: c}))
    assert len(out) == 4 and all(c.status == "pass" for c in out)
    assert sorted(calls) == ["planted-0"] * 2 + ["planted-1"] * 2
    assert [c for i in impls for c in shown[i.name]] == out
