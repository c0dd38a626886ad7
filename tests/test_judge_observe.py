"""What the judge is shown (issue 26): `observe`'s record of each call, made where the
implementation runs, checked field by field: which call failed, how long it took, which
results were poisoned, the third call only after two poisoned ones were let go, inputs written
by an out-of-place implementation (an in-place one may write its own), and `plan`'s skips.
"""

from __future__ import annotations

import time

import numpy as np

from harness import InPlace, Spec
from harness.core import inplace
from harness.core.observe import observe, plan
from harness.core.registry import Implementation
from tests.adversaries import table as correct_table
from tests.adversaries import writes_twice

SPEC = Spec(16, 8)
X = np.arange(2 * 16 * 8, dtype=np.float32).reshape(2, 16, 8)   # a forward's input


def impl_of(build, workload: str = "table", forms=None, supports=lambda spec: None):
    return Implementation(name="x", backend="numpy", device="cpu", build=build,
                          supports_fn=supports, workload=workload, forms=forms)


def seen_of(build, workload: str = "table", args: tuple = (), forms=None):
    before = time.perf_counter()
    seen = observe(impl_of(build, workload, forms), SPEC, args, timeout_s=30.0)
    assert 0.0 < seen.seconds <= time.perf_counter() - before, seen.seconds
    return seen


def fresh(spec, *args):
    return lambda: correct_table(spec)


def read_only(spec, *args):
    def call():
        out = correct_table(spec)
        out.flags.writeable = False
        return out
    return call


def test_a_poisonable_builder_is_called_three_times_and_only_its_first_two_are_poisoned():
    seen = seen_of(fresh)
    assert (len(seen.results), seen.poisoned, seen.same_buffer) == (3, (True, True, False), False)
    assert (seen.error, seen.failed_call, seen.mismatch, seen.wrote_inputs) == ("", -1, "", ())


def test_without_two_poisoned_results_there_is_no_third_call():
    seen = seen_of(read_only)
    assert (len(seen.results), seen.poisoned, seen.same_buffer) == (2, (False, False), False)


def test_the_third_call_comes_after_both_poisoned_results_were_let_go():
    """A recycler that writes only twice hands its third caller a poisoned buffer back."""
    seen = seen_of(writes_twice)
    assert np.isnan(seen.results[2].array).all()


def test_a_build_that_raises_or_a_factory_that_contradicts_its_declaration_is_recorded():
    def broken(spec):
        raise RuntimeError("no")
    seen = seen_of(broken)
    assert (seen.error, seen.failed_call, seen.results) == ("RuntimeError: no", 0, ())
    seen = seen_of(lambda spec: InPlace(lambda: None, lambda: correct_table(spec)))
    assert seen.mismatch.startswith("its factory returned harness.InPlace") and not seen.results


def test_a_call_that_raises_keeps_the_results_before_it():
    def build(spec):
        calls = []

        def call():
            calls.append(1)
            if len(calls) == 2:
                raise ValueError("second")
            return correct_table(spec)
        return call
    seen = seen_of(build)
    assert (seen.error, seen.failed_call, len(seen.results), seen.poisoned) == \
        ("ValueError: second", 2, 1, (True,))


def test_an_out_of_place_forward_that_writes_its_input_is_named_and_an_in_place_one_may():
    def writes(spec, x):
        def call():
            x[...] += correct_table(spec)
            return x.copy()
        return call
    assert seen_of(writes, "forward", (X,)).wrote_inputs == ("x",)
    assert seen_of(lambda spec, x: lambda: x + correct_table(spec), "forward",
                   (X,)).wrote_inputs == ()

    def in_place(spec, x):
        original = x.copy()

        def reset():
            x[...] = original

        def call():
            x[...] += correct_table(spec)
            return x
        return InPlace(reset, call)
    forms = type("Forms", (), {"in_place": True})()
    seen = seen_of(in_place, "forward", (X,), forms)
    assert (seen.wrote_inputs, seen.mismatch, len(seen.results)) == ((), "", 4)   # + negated


def test_written_names_each_changed_input_and_numbers_those_past_the_names():
    a, b, nan = np.zeros(3), np.ones(3), np.array([np.nan, 1.0])
    assert inplace.written((a, b), (a + 1, b + 1), ("q",)) == ("q", "#2")
    assert inplace.written((a, b, 7), (a, b, 8), ("q", "k", "ids")) == ()   # arrays only
    assert inplace.written((nan,), (nan.copy(),), ("x",)) == ()              # NaN is unchanged


def test_plan_answers_every_case_and_an_error_is_the_build_s():
    specs = [SPEC, SPEC.replace(length=32), SPEC.replace(length=48)]

    def supports(spec):
        if spec.length == 32:
            raise RuntimeError("cannot tell")
        return "too long" if spec.length == 48 else None
    ahead = plan(impl_of(fresh, supports=supports), specs, 30.0).ahead
    assert ahead[0] is None and ahead[2].skip == "too long"
    assert (ahead[1].error, ahead[1].failed_call) == ("supports: RuntimeError: cannot tell", 0)

    def hangs(spec):
        time.sleep(5)
    ahead = plan(impl_of(fresh, supports=hangs), specs, 0.2).ahead
    assert len(ahead) == 3 and ahead[0].error.startswith("supports: timeout")
    assert all((a.error, a.failed_call) == ("not run: an earlier case timed out", 0)
               for a in ahead[1:])


# -- inputs at call time (harness.core.handover) ---------------------------------------------

def test_a_call_time_forward_gets_a_fresh_converted_set_per_call_and_is_told_which():
    """The factory takes the spec only; each of its calls is handed new arrays holding input
    sets 0, 1, 2 (never the caller's own), and the observation says which each result came from."""
    from harness.core import handover
    handed = []

    def build(spec):
        def forward(x):
            handed.append(x)
            return x + correct_table(spec)
        return forward
    seen = seen_of(build, "forward", (X,))
    assert (seen.variants, seen.at_call, len(seen.results)) == ((0, 1, 2), True, 3)
    for n, x in enumerate(handed):
        np.testing.assert_array_equal(x, handover.variant((X,), n)[0])
        assert x is not X and not np.shares_memory(x, X)
    np.testing.assert_array_equal(seen.results[1].array, -X + correct_table(SPEC))


def test_a_build_time_forward_is_called_once_more_after_its_inputs_are_negated():
    copies = seen_of(lambda spec, x: (lambda y=x.copy(): y + correct_table(spec)), "forward", (X,))
    views = seen_of(lambda spec, x: (lambda: x + correct_table(spec)), "forward", (X,))
    for seen in (copies, views):
        assert (seen.variants, seen.at_call, len(seen.results)) == ((0, 0, 0, 1), False, 4)
    np.testing.assert_array_equal(views.results[3].array, -X + correct_table(SPEC))
    np.testing.assert_array_equal(copies.results[3].array, X + correct_table(SPEC))


def test_a_call_time_in_place_kernel_returns_a_plain_callable_and_writes_what_it_is_handed():
    forms = type("Forms", (), {"in_place": True})()

    def build(spec):
        def forward(x):
            x += correct_table(spec)
            return x
        return forward
    seen = seen_of(build, "forward", (X,), forms)
    assert (seen.wrote_inputs, seen.mismatch, seen.variants) == ((), "", (0, 1, 2))
    wrapped = seen_of(lambda spec: InPlace(lambda: None, lambda: None), "forward", (X,), forms)
    assert "returns fn(*inputs)" in wrapped.mismatch
    out_of_place = seen_of(build, "forward", (X,))
    assert out_of_place.wrote_inputs == ("x",)
