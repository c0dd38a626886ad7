"""bench judges apart (issue 20): its parent plans from the implementations' own answers given by a
child (harness.core.catalog), never importing one, and holds the values every cell returned - the
first call's and a timed call's, sampled - to a reference it computes itself
(harness.bench.fingerprint). A plugin that rewrites numpy's absolute value at import and returns
a consistently wrong table is `invalid`, beside a correct control that stays `ok`."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from harness import Spec
from harness.bench.cells import Cell
from harness.bench.fingerprint import SAMPLES, Judge, indices, sample
from harness.core import catalog, kinds
from tests.test_judge_apart import bench, write


@pytest.mark.e2e
def test_a_consistently_wrong_plugin_that_rewrites_numpy_is_invalid_in_bench(tmp_path):
    """One sweep, two cheats beside two controls: a table wrong in every call from a plugin that
    zeroes numpy's absolute value is `invalid`; a forward that computed x + PE in its factory
    and copies it (right values, a fresh buffer each call) does not follow its x negated in
    place and is flagged `inputs`, never recommended; numpy-forward, reading x at each call,
    and a right table are clean."""
    plugin = write(tmp_path, "bench_wrong", textwrap.dedent('''
        from harness import reference
        np.abs = np.absolute = lambda x, *a, **k: np.zeros(np.shape(x))
        @register(name="adv-shifted", backend="numpy", supports=ONE)
        def build(spec):
            wrong = spec.replace(offset=spec.offset + 1)     # wrong in every call, first included
            return lambda: reference(wrong).astype(spec.dtype)
        @register(name="adv-right", backend="numpy", supports=ONE)
        def build_right(spec):
            return lambda: reference(spec).astype(spec.dtype)
        @register(name="adv-forward-once", backend="numpy", workload="forward", supports=ONE)
        def build_once(spec, x):
            y = (x + reference(spec)[None]).astype(spec.dtype)
            return lambda: y.copy()
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "64", "--workloads", "table,forward",
                             "--only", "numpy-forward")
    assert code == 0, text
    rows = rows.set_index("impl")
    assert rows.loc["adv-shifted", "status"] == "invalid", text
    assert "first call" in rows.loc["adv-shifted", "reason"]
    assert "differ from the reference" in rows.loc["adv-shifted", "reason"]
    assert rows.loc["adv-right", "status"] == "ok", text
    assert rows.loc["adv-forward-once", "status"] == "ok"
    assert "inputs: its result did not follow its inputs" in rows.loc["adv-forward-once", "flags"]
    assert rows.loc["numpy-forward", "status"] == "ok"
    assert "inputs:" not in rows.loc["numpy-forward", "flags"]


def cell(workload: str = "table", kind: str = "table", length: int = 64, width: int = 8,
         batch: int = 1) -> Cell:
    return Cell("x", "numpy", "cpu", workload, kinds.named(kind).first_convention, length, width,
                "float32", 1, batch, kind=kind)


def expected_values(c: Cell) -> np.ndarray:
    spec = c.spec()
    kind = kinds.named(c.kind)
    want, _ = c.work.expected(spec, c.work.arguments(spec, c.batch, c.heads), kind.reference(spec),
                              kind.tolerance(spec))
    return want.astype(np.float32)


@pytest.mark.parametrize("workload, batch", [("table", 1), ("forward", 2)])
def test_the_judge_passes_the_reference_and_fails_one_wrong_sampled_value(workload, batch):
    c = cell(workload, length=256, width=16, batch=batch)
    judge = Judge(seed=7)
    right = sample(expected_values(c), 7)
    assert len(right) == SAMPLES
    row = {**c.as_dict(), "status": "ok", "sampled": (right, right)}
    assert judge.problem(row) == ""
    timed = list(right)
    timed[SAMPLES // 2] += 1e-3          # one value off, in the timed call only
    reason = judge.problem({**row, "sampled": (right, tuple(timed))})
    assert reason.startswith("a call under the benchmark's timer: its values at 512 sampled")
    assert judge.problem({**row, "sampled": (tuple(timed), right)}).startswith("first call")


def test_the_judge_leaves_rows_it_has_nothing_to_judge():
    judge = Judge(seed=1)
    c = cell()
    wrong = (tuple([9.0] * 8),)
    assert judge.problem({**c.as_dict(), "status": "invalid", "sampled": wrong}) == ""
    assert judge.problem({**c.as_dict(), "status": "ok", "sampled": ()}) == ""
    assert judge.problem({**c.as_dict(), "status": "ok", "is_roof": True, "sampled": wrong}) == ""
    assert "sampled values, expected" in judge.problem({**c.as_dict(), "status": "ok",
                                                        "sampled": wrong})


def test_a_result_too_large_to_judge_here_is_left_to_verify(monkeypatch):
    from harness.bench import fingerprint
    c = cell(length=64, width=8)
    row = {**c.as_dict(), "status": "ok", "sampled": (tuple([9.0] * 512),)}
    assert Judge(seed=1).problem(row) != ""
    monkeypatch.setattr(fingerprint, "JUDGED_ELEMENTS", c.elements - 1)
    assert Judge(seed=1).problem(row) == ""


def test_sampled_places_are_the_seeds_and_cover_a_small_result_whole():
    assert list(indices(10, 3)) == list(range(10))
    assert list(indices(10_000, 3)) == list(indices(10_000, 3))
    assert list(indices(10_000, 3)) != list(indices(10_000, 4))
    assert sample(None, 3) == () and sample(np.ones(4), None) == ()


def test_the_catalog_answers_supports_and_availability_from_the_plugins_process(tmp_path):
    plugin = write(tmp_path, "asked", textwrap.dedent('''
        import harness.core.checks
        harness.core.checks.error_ratio = None        # the planning process never sees this
        @register(name="adv-one", backend="numpy", supports=ONE)
        def build(spec):
            return lambda: None
        def broken(spec):
            raise RuntimeError("supports blew up")
        @register(name="adv-raises", backend="numpy", supports=broken)
        def build_raises(spec):
            return lambda: None
        '''))
    fits, other = Spec(8, 8), Spec(8, 8, layout="concat")
    found = {e.name: e for e in catalog.entries([str(plugin)], [fits, other])}
    one, raises = found["adv-one"], found["adv-raises"]
    assert one.available and one.supports(fits) is None and "concat" in one.supports(other)
    assert raises.supports(fits).startswith("supports: RuntimeError: supports blew up")
    with pytest.raises(KeyError, match="was not asked"):
        one.supports(Spec(16, 8))
    from harness.core import checks
    assert checks.error_ratio is not None


def test_conventions_judges_apart_a_plugin_rewriting_numpy_cannot_match_zeros(tmp_path):
    """conventions' own process never imports the plugin (harness.core.catalog), and the
    implementations only hand back what they returned: zeros never match, numpy's own
    implementations in the plugin's process still do."""
    import os
    import subprocess
    import sys

    import pandas as pd

    from tests.test_judge_apart import ROOT, SABOTAGE, ZEROS
    plugin = write(tmp_path, "conventions_abs", SABOTAGE["numpy-abs"] + ZEROS)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness", "conventions", "--quick", "--plugin",
                           str(plugin), "--only", "adv-*", "--only", "seed-numpy-stack",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=240, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stdout + done.stderr
    cells = pd.read_csv(out / "conventions.csv", keep_default_na=False)
    mine = cells[cells["probe"] == "interleaved shift=0 sin|cos"].set_index("impl")
    assert mine.loc["adv-zeros", "status"] == "differs", mine
    assert mine.loc["adv-zeros", "table_class"] != "="
    assert mine.loc["seed-numpy-stack", "status"] == "match"


def test_identify_keeps_a_plugin_rewriting_numpy_out_of_its_search(tmp_path):
    """With a plugin, identify's process gets identities only: its search and checks run on
    numpy as it is, and the libraries a Spec names (the plugin's own library convention
    included) are asked of a child."""
    import json
    import os
    import subprocess
    import sys

    from harness import reference
    from tests.test_judge_apart import ROOT, SABOTAGE
    plugin = write(tmp_path, "identify_sin", SABOTAGE["numpy-sin-cos"] + textwrap.dedent('''
        @register(name="adv-library", backend="numpy", reference=True,
                  supports=Supports(layouts=("concat",), freq_shifts=(1,)))
        def build(spec):
            return lambda: None
        '''))
    path = tmp_path / "pe.npy"
    np.save(path, reference(Spec(200, 64, layout="concat", freq_shift=1)).astype(np.float32))
    done = subprocess.run([sys.executable, "-m", "harness", "identify", str(path), "--json",
                           "--plugin", str(plugin)], cwd=ROOT, capture_output=True, text=True,
                          timeout=240, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["match"] is True and found["layout"] == "concat" and found["freq_shift"] == 1
    assert "adv-library" in found["libraries"]


@pytest.mark.e2e
def test_a_forward_and_an_apply_computing_their_first_result_once_are_invalid_in_bench(tmp_path):
    """Handed their inputs at every call (harness.core.handover), a forward and an apply that
    keep their first answer and hand back copies (timed as a memcpy) return, given other inputs
    after the timed rounds, the first inputs' answer: bench's judge, where no implementation
    runs, makes both cells `invalid`; so does a forward keyed on its input's identity (which
    verify passes: each of its calls gets new arrays), as bench negates the same arrays in
    place; the same code computing every call is clean."""
    plugin = write(tmp_path, "bench_once", textwrap.dedent('''
        from harness import RotarySupports
        from tests.adversaries import first_apply, first_forward, keyed_forward
        ROT = RotarySupports(dtypes=("float32",))
        register(name="adv-forward-once", backend="numpy", workload="forward", supports=ONE)(
            lambda spec: first_forward(spec))
        register(name="adv-forward-keyed", backend="numpy", workload="forward", supports=ONE)(
            keyed_forward)
        register(name="adv-forward-every", backend="numpy", workload="forward", supports=ONE)(
            lambda spec: first_forward(spec, once=False))
        register(name="adv-apply-once", backend="numpy", workload="apply", supports=ROT)(
            lambda spec: first_apply(spec))
        register(name="adv-apply-every", backend="numpy", workload="apply", supports=ROT)(
            lambda spec: first_apply(spec, once=False))
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "64", "--workloads", "forward,apply")
    assert code == 0, text
    rows = rows.set_index("impl")
    for cheat in ("adv-forward-once", "adv-apply-once", "adv-forward-keyed"):
        assert rows.loc[cheat, "status"] == "invalid", text
        assert "a result computed once and handed back" in rows.loc[cheat, "reason"]
    for control in ("adv-forward-every", "adv-apply-every"):
        assert rows.loc[control, "status"] == "ok", text
        assert "inputs:" not in rows.loc[control, "flags"]


def test_the_inputs_flag_holds_values_after_the_change_to_the_changed_inputs():
    from harness.bench.fingerprint import negated
    from harness.core.handover import negate_in_place as negate_inputs
    c = cell("forward", length=64, width=8, batch=2)
    spec, kind = c.spec(), kinds.named("table")
    args = c.work.arguments(spec, c.batch, c.heads)
    after, _ = c.work.expected(spec, negated(args), kind.reference(spec), kind.tolerance(spec))
    row = {**c.as_dict(), "status": "ok", "moved": sample(after.astype(np.float32), 5)}
    assert Judge(seed=5).inputs_flag(row) == ""
    stale = {**row, "moved": sample(expected_values(c), 5)}
    assert Judge(seed=5).inputs_flag(stale).startswith("inputs: its result did not follow")
    assert Judge(seed=5).inputs_flag({**stale, "is_roof": True}) == ""
    x = np.ones(3, np.float32)
    positions = np.arange(3)
    assert negate_inputs((x, positions)) and list(x) == [-1, -1, -1]
    assert list(positions) == [0, 1, 2] and not negate_inputs((positions,))


def test_a_call_time_result_that_does_not_follow_other_inputs_is_invalid_not_flagged():
    """An implementation handed its inputs at every call (harness.core.handover) that returns,
    given the negated inputs after the timed rounds, the first inputs' answer computed the
    result once: bench's judge makes the cell `invalid`; following them, it is judged as usual."""
    from harness.bench.fingerprint import negated
    c = cell("forward", length=64, width=8, batch=2)
    spec, kind = c.spec(), kinds.named("table")
    args = c.work.arguments(spec, c.batch, c.heads)
    after, _ = c.work.expected(spec, negated(args), kind.reference(spec), kind.tolerance(spec))
    right = sample(expected_values(c), 5)
    row = {**c.as_dict(), "status": "ok", "inputs_at": "call", "sampled": (right, right),
           "moved": sample(after.astype(np.float32), 5)}
    assert Judge(seed=5).problem(row) == "" and Judge(seed=5).inputs_flag(row) == ""
    cached = {**row, "moved": right}
    assert "a result computed once and handed back" in Judge(seed=5).problem(cached)
    assert Judge(seed=5).inputs_flag(cached) == ""          # a verdict, not a flag
    assert Judge(seed=5).inputs_flag({**cached, "inputs_at": "build"}).startswith("inputs: ")


def test_the_judges_verdict_replaces_the_timing_it_judged_but_a_failed_retry_does_not():
    """results.newest keeps a key's last row timed ok; the judge's later `invalid` row (its
    `judged` field) must win over the ok row it judged, while a plain later failure must not."""
    import pandas as pd

    from harness.runs.results import newest
    ok = {"key": "a", "status": "ok", "median_s": 1.0}
    judged = newest(pd.DataFrame([ok, {**ok, "status": "invalid", "judged": "reference"}]))
    assert list(judged["status"]) == ["invalid"] and list(judged["attempts"]) == [2]
    failed = newest(pd.DataFrame([ok, {"key": "a", "status": "error", "median_s": None}]))
    assert list(failed["status"]) == ["ok"]
