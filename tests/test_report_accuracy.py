"""What verify.csv says of an implementation, read through the per-frame split (harness.runs.verdicts.rows_of)."""

from __future__ import annotations

import pandas as pd

from harness.report.accuracy import long_accuracy
from harness.runs.verdicts import grade, rows_of, verdict


def _verify(status: str, err: float) -> pd.DataFrame:
    return pd.DataFrame({"impl": ["a", "a", "b"], "dtype": ["float32"] * 3,
                         "status": [status, "pass", "pass"], "grade": ["exact"] * 3,
                         "max_abs_err": [err, err / 2, 1e-7], "max_position": [70000, 10, 70000]})


def test_each_verify_frame_answers_for_itself_even_after_another_was_asked():
    good, bad = _verify("pass", 1e-6), _verify("fail", 1e-3)
    assert verdict(good, "a", "float32") is None
    assert verdict(bad, "a", "float32") == "fails verify (1 fail, 0 error)"
    assert verdict(good, "a", "float32") is None          # the earlier frame's split, not the newer's
    assert long_accuracy(bad, "a", "float32").max_abs_err == 1e-3
    assert long_accuracy(good, "a", "float32").max_abs_err == 1e-6


def test_a_frame_made_at_a_dead_frames_address_is_split_afresh():
    for status in ("pass", "fail", "pass", "fail"):     # frames come and go, addresses recur
        expected = None if status == "pass" else "fails verify (1 fail, 0 error)"
        assert verdict(_verify(status, 1e-6), "a") == expected


def test_an_implementation_verify_never_ran_has_no_rows_and_no_grade():
    frame = _verify("pass", 1e-6)
    assert rows_of(frame, "zz").empty and list(rows_of(frame, "zz").columns) == list(frame.columns)
    assert verdict(frame, "zz") == "not in verify.csv"
    assert grade(frame, "zz") == "" and long_accuracy(frame, "zz", "float32") is None
    assert grade(frame, "b", "float32") == "exact"
