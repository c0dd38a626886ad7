"""The Python API a user's own tests call: check_callable / assert_callable, and --json for CI.

Each callable here is written out in the test (no harness helper builds it), so
a pass means the harness judged the user's table, not its own.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import harness
from harness import Spec, assert_callable, check_callable, reference
from harness.cli import main
from harness.core.checks import check
from harness.core.registry import REGISTRY
from tests import adversaries

SPEC = Spec(2000, 64)


def paper_table(spec: Spec, layout: str = "interleaved") -> np.ndarray:
    """A user's own float64-angle builder of the paper table (interleaved or concat columns)."""
    pos = np.arange(spec.length, dtype=np.float64)[:, None]
    inv = spec.base ** (-np.arange(spec.d_model // 2) * 2.0 / spec.d_model)
    sin, cos = np.sin(pos * inv), np.cos(pos * inv)
    out = (np.stack([sin, cos], 2).reshape(spec.length, -1) if layout == "interleaved"
           else np.concatenate([sin, cos], 1))
    return out.astype(spec.dtype)


def test_a_correct_callable_passes_with_its_error_measured():
    result = check_callable(lambda: paper_table(SPEC), SPEC, name="mine")
    assert isinstance(result, harness.Check)
    assert (result.impl, result.status, result.reason) == ("mine", "pass", "")
    assert 0 < result.max_abs_err < result.tol and result.err_ratio < 1


def test_the_verdict_is_the_one_verify_gives_a_registered_implementation():
    """Same path: an Implementation registered around the same builder gets the same numbers."""
    registered = adversaries.implementation("control")
    direct = check(registered, SPEC)
    mine = check_callable(registered.build(SPEC), SPEC)
    assert (mine.status, mine.max_abs_err, mine.tol, mine.worst_pos, mine.worst_col) == \
        (direct.status, direct.max_abs_err, direct.tol, direct.worst_pos, direct.worst_col)


def test_nothing_is_registered():
    before = {i.name for i in REGISTRY.all()}
    check_callable(lambda: paper_table(SPEC), SPEC, name="never-registered")
    assert {i.name for i in REGISTRY.all()} == before


@pytest.mark.parametrize("fn, expected", [
    (lambda: paper_table(SPEC, "concat"), "column"),                         # wrong layout
    (lambda: paper_table(SPEC).astype(np.float64), "dtype float64, expected float32"),
    (lambda: paper_table(SPEC)[:-1], "shape (1999, 64), expected (2000, 64)"),
])
def test_a_wrong_table_fails_and_says_why(fn, expected):
    result = check_callable(fn, SPEC)
    assert result.status == "fail" and expected in result.reason


def test_a_cached_table_fails_the_poison_test():
    kept = paper_table(SPEC)
    result = check_callable(lambda: kept, SPEC)
    assert result.status == "fail" and "cached result" in result.reason


def test_an_exception_or_a_hang_is_an_error_not_raised():
    def broken():
        raise RuntimeError("boom")

    assert check_callable(broken, SPEC).reason == "RuntimeError: boom"
    hung = check_callable(lambda: time.sleep(5), SPEC, timeout_s=0.2)
    assert hung.status == "error" and hung.reason.startswith("timeout")


def test_forward_adds_the_table_to_x():
    spec = Spec(300, 32)
    good = check_callable(lambda x: x + paper_table(spec), spec, workload="forward")
    forgot = check_callable(lambda x: x.copy(), spec, workload="forward")
    assert good.status == "pass" and good.workload == "forward"
    assert forgot.status == "fail"


def test_a_torch_callable_is_judged_too():
    torch = pytest.importorskip("torch")
    spec = Spec(512, 64, layout="concat", freq_shift=1)

    def t2t():
        pos = torch.arange(spec.length, dtype=torch.float64)[:, None]
        inv = spec.base ** (-torch.arange(32, dtype=torch.float64) / 31)
        return torch.cat([torch.sin(pos * inv), torch.cos(pos * inv)], 1).float()

    assert check_callable(t2t, spec).status == "pass"
    assert check_callable(t2t, spec.replace(freq_shift=0)).status == "fail"


def test_assert_callable_raises_with_the_spec_and_the_reason():
    assert assert_callable(lambda: paper_table(SPEC), SPEC).status == "pass"
    with pytest.raises(AssertionError) as caught:
        assert_callable(lambda: paper_table(SPEC, "concat"), SPEC, name="my-pe")
    message = str(caught.value)
    assert message.startswith("my-pe on ") and SPEC.short() in message
    assert "fail: error" in message and "x its tolerance, worst at position" in message


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="harness.Spec"):
        check_callable(lambda: None, (10, 4))
    with pytest.raises(TypeError, match="callable"):
        check_callable(np.zeros((10, 4)), Spec(10, 4))
    with pytest.raises(ValueError, match="workload"):
        check_callable(lambda: None, Spec(10, 4), workload="lookup")


def test_list_json_describes_every_implementation(capsys):
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    names = {i.name for i in harness.implementations()}
    assert {entry["name"] for entry in listed} == names
    for entry in listed:
        assert {"name", "backend", "device", "workload", "conventions", "available",
                "reason"} <= set(entry)
        assert (entry["reason"] is None) == entry["available"], entry
    stack = next(e for e in listed if e["name"] == "numpy-stack")
    assert stack["supports"]["layouts"] == ["interleaved"] and stack["available"] is True


def test_verify_json_is_the_only_thing_on_stdout_and_names_failures(tmp_path, capsys):
    plugin = tmp_path / "bad_plugin.py"
    plugin.write_text(
        "from harness import register\n"
        "from tests.adversaries import INTERLEAVED_PAPER, WRONG\n"
        "register(name='json-broken', backend='numpy', supports=INTERLEAVED_PAPER)"
        "(WRONG['positions-off-by-one'])\n")
    code = main(["verify", "--quick", "--json", "--plugin", str(plugin), "--only", "json-broken",
                 "--only", "numpy-stack", "--in-process", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    found = json.loads(captured.out)          # nothing but the JSON on stdout
    assert code == 1 and found["ok"] is False and found["failed"] == ["json-broken"]
    counts = {r["impl"]: r for r in found["implementations"]}
    assert counts["numpy-stack"]["fail"] == 0 and counts["json-broken"]["fail"] > 0
    assert found["problems"] and {p["impl"] for p in found["problems"]} == {"json-broken"}
    assert found["problems"][0]["status"] == "fail" and "layout" in found["problems"][0]
    assert "json-broken" in captured.err      # progress went to stderr
    assert "NaN" not in captured.out          # strict JSON: no error measured is null


def test_the_callable_runs_in_the_callers_thread_without_a_time_limit():
    import math
    import threading

    seen = []

    def fn():
        seen.append(threading.current_thread())
        return reference(SPEC).astype(SPEC.dtype)

    assert check_callable(fn, SPEC, timeout_s=math.inf).status == "pass"
    assert seen and set(seen) == {threading.current_thread()}


def test_a_hang_is_interrupted_not_left_running():
    import threading
    import time

    started = time.monotonic()
    hung = check_callable(lambda: time.sleep(30), SPEC, timeout_s=0.3)
    assert hung.status == "error" and hung.reason.startswith("timeout")
    assert time.monotonic() - started < 20
    assert not [t for t in threading.enumerate() if t.name == "pe-harness-call"]


def test_system_exit_from_the_callable_is_an_error_verdict():
    def quits():
        raise SystemExit(0)

    result = check_callable(quits, SPEC)
    assert result.status == "error" and result.reason == "SystemExit: 0"


def test_a_callable_patching_numpy_cannot_pass_zeros():
    """The verdict is made in a judge process of its own, where numpy is numpy."""
    def cheat():
        np.sin = np.cos = lambda x, *a, **k: np.zeros(np.shape(x))
        np.abs = np.absolute = lambda x, *a, **k: np.zeros(np.shape(x))
        return np.zeros((SPEC.length, SPEC.d_model), SPEC.dtype)

    sin, cos, abs_, absolute = np.sin, np.cos, np.abs, np.absolute
    try:
        result = check_callable(cheat, SPEC)
    finally:
        np.sin, np.cos, np.abs, np.absolute = sin, cos, abs_, absolute
    assert result.status == "fail" and "tolerance" in result.reason
