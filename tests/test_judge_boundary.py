"""The tolerance boundary, for every kind, workload and dtype: an error of 0.9x an element's
tolerance passes, 1.1x fails (issue 26).

Every wrong implementation elsewhere in the tests misses by orders of magnitude, so a judge
that doubled or halved every bound would break none of them. Here one element of an otherwise
exact result (the truth rounded once to the output dtype) is moved to 0.9x or 1.1x of its own
tolerance, computed at run time from the kind's tolerance, and chosen so that the error survives
rounding to the output dtype (half precision included).
"""

from __future__ import annotations

import dataclasses

import pytest
from ml_dtypes import finfo

from harness import TimestepSpec, check_callable
from harness.core import kinds
from tests.judged import DTYPES, SPECS, as_result, callable_returning, judge_here, plant, truth

PASSES, FAILS = 0.9, 1.1
#: How far the planted error may land from 0.9x / 1.1x after rounding to the output dtype.
SLACK = 0.02


def judged(workload: str, dtype: str, factor: float, judge=judge_here):
    spec = SPECS[workload](dtype)
    planted = []

    def make(expected, allowed):
        values, where = plant(expected, allowed, dtype, factor)
        planted.append(where)
        return values

    result = judge(callable_returning(spec, workload, make), spec, workload=workload)
    return result, planted[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("workload", sorted(SPECS))
@pytest.mark.parametrize("factor", [PASSES, FAILS])
def test_an_error_just_inside_the_tolerance_passes_and_just_outside_fails(workload, dtype, factor):
    result, where = judged(workload, dtype, factor)
    assert abs(where.ratio - factor) < SLACK, f"could not plant {factor}x in {dtype}: {where}"
    assert result.status == ("pass" if factor < 1 else "fail"), result.reason
    assert result.grade != "fail" if factor < 1 else result.grade == "fail"
    # the judge measured the planted element, at its own tolerance, where it was planted
    assert result.err_ratio == pytest.approx(where.ratio, rel=1e-9)
    assert (result.worst_pos, result.worst_col) == where.index[-2:]
    assert result.max_abs_err == pytest.approx(where.ratio * result.tol, rel=1e-9)
    assert result.ulps == pytest.approx(result.max_abs_err / float(finfo(dtype).eps), rel=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("workload", sorted(SPECS))
@pytest.mark.parametrize("factor, grade", [(PASSES, "exact"), (FAILS, "float32")])
def test_a_pass_is_graded_exact_only_within_the_exact_contract(workload, dtype, factor, grade):
    """An error of 0.9x the exact bound grades `exact`, 1.1x (still well within the float32
    bound) grades `float32`."""
    spec = SPECS[workload](dtype)
    planted = []

    parts = kinds.of(spec).workload(workload).parts

    def fn(*inputs):
        expected, allowed = truth(spec, workload, inputs)
        _, exact = truth(spec, workload, inputs, "exact")
        values, where = plant(expected, exact, dtype, factor, among=allowed > 1.5 * exact)
        planted.append(where)
        return as_result(values, dtype, parts)

    result = judge_here(fn, spec, workload)
    where = planted[0]
    assert abs(where.ratio - factor) < SLACK, f"could not plant {factor}x: {where}"
    assert (result.status, result.grade) == ("pass", grade), result.reason


@pytest.mark.parametrize("workload", sorted(SPECS))
@pytest.mark.parametrize("factor", [PASSES, FAILS])
def test_check_callable_draws_the_same_line_in_its_judge_process(workload, factor):
    public, where = judged(workload, "bfloat16", factor, judge=check_callable)
    here, _ = judged(workload, "bfloat16", factor)
    assert (public.status, public.err_ratio, public.worst_pos, public.worst_col) == \
        (here.status, here.err_ratio, here.worst_pos, here.worst_col)
    assert public.status == ("pass" if factor < 1 else "fail")


@pytest.mark.parametrize("workload", ["table", "timestep"])
def test_verify_csv_row_records_the_verdict_and_its_evidence(workload):
    """What verify.csv keeps of a check: identity, the spec's fields (a long timestep vector
    summarised in one cell), the measures at the worst element, the verdict."""
    result, where = judged(workload, "float32", FAILS)
    row = result.row()
    assert (row["impl"], row["backend"], row["device"], row["kind"], row["workload"]) == \
        (result.impl, "python", "cpu", "table" if workload == "table" else "timestep", workload)
    assert (row["status"], row["worst_pos"], row["worst_col"]) == ("fail", *where.index[-2:])
    assert (row["err_ratio"], row["tol"], row["max_abs_err"], row["ulps"], row["reason"]) == \
        (result.err_ratio, result.tol, result.max_abs_err, result.ulps, result.reason)
    assert row["seconds"] == result.seconds and row["dtype"] == "float32"
    for field, value in result.spec.as_dict().items():
        if isinstance(value, (list, tuple)) and len(value) > 8:
            assert row[field] == f"{len(value)} values, {min(value):g} .. {max(value):g}"
        else:
            assert row[field] == value, field
    if workload == "timestep":     # eight values fit in a cell, nine are summarised
        for count, cell in ((8, list(range(8))), (9, "9 values, 0 .. 8")):
            spec = TimestepSpec(tuple(float(t) for t in range(count)), 18)
            assert dataclasses.replace(result, spec=spec).row()["timesteps"] == cell
