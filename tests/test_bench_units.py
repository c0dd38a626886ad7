"""bench's pure parts, without workers: planning, budgets, the journal, the tidy table."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.backends import host
from harness.bench import budget, peak
from harness.bench.cells import Cell, Outcome, choose_convention, row
from harness.bench.grid import Grid, plan
from harness.bench.settings import Limits, Timing
from harness.bench.supervisor import describe_exit
from harness.core.registry import Registry
from harness.core.selection import select
from harness.core.supports import Supports
from harness.runs import journal, results

TIMING = Timing(max_time=0.1, min_rounds=5)


def cell(length: int = 64, d_model: int = 64, impl: str = "a", threads: int = 1,
         is_roof: bool = False, workload: str = "table", dtype: str = "float32") -> Cell:
    return Cell(impl, "numpy", "cpu", workload, "paper", length, d_model, dtype, threads,
                is_roof=is_roof)


def ok(c: Cell, median_s: float) -> dict:
    return row(c, Outcome("ok", median_s=median_s, iqr_s=median_s / 100))


def registry() -> Registry:
    reg = Registry()
    table = lambda spec: (lambda: np.zeros((spec.length, spec.d_model)))  # noqa: E731
    reg.register(name="fast", backend="numpy")(table)
    reg.register(name="loops", backend="python")(table)
    reg.register(name="lib-fairseq", backend="numpy", reference=True)(table)
    reg.register(name="lib-plugin", backend="numpy")(table)      # a plugin's name, not a reference
    reg.register(name="concat-only", backend="numpy",
                 supports=Supports(layouts=("concat",), freq_shifts=(1,)))(table)
    reg.register(name="f64-only", backend="numpy", supports=Supports(dtypes=("float64",)))(table)
    reg.register(name="gone", backend="numpy", check=lambda: "no such device")(table)
    return reg


# -- planning -------------------------------------------------------------------

def test_references_are_timed_only_when_asked_for_and_a_name_decides_nothing():
    impls = registry().all()
    timed = [i.name for i in select(impls, (), timing=True)]
    assert "lib-fairseq" not in timed and "lib-plugin" in timed
    assert "lib-fairseq" in [i.name for i in select(impls, ())]      # verify checks it
    assert [i.name for i in select(impls, ("lib-*",), timing=True)] == ["lib-fairseq", "lib-plugin"]


def test_the_built_in_library_conventions_are_references():
    from harness import implementations

    lib = [i for i in implementations(()) if i.origin.endswith("library_conventions")]
    assert lib and all(i.reference for i in lib)


def test_plan_caps_sizes_pins_python_to_one_thread_and_explains_the_rest():
    grid = Grid(lengths=(64, 4096), d_models=(64, 1024), dtypes=("float32",), threads=(1, 2),
                workloads=("table",), max_elements=4096 * 64)
    cells = plan(registry().all(), grid)
    fast = [c for c in cells.cells if c.impl == "fast"]
    assert {(c.length, c.d_model) for c in fast} == {(64, 64), (64, 1024), (4096, 64)}
    assert {c.threads for c in fast} == {1, 2}
    assert {c.threads for c in cells.cells if c.impl == "loops"} == {1}
    assert {c.convention for c in cells.cells if c.impl == "concat-only"} == {"t2t"}
    assert {c.impl for c, _ in cells.unsupported} == {"f64-only"}
    assert all("float32 not supported" in why for _, why in cells.unsupported)
    assert cells.unavailable == {"gone": "no such device"}
    roofs = [c for c in cells.cells if c.is_roof]
    assert {c.impl for c in roofs} == {"roof-numpy-fill", "roof-recycled-fill"}
    assert len(roofs) == 3 * 2 * 2      # two per (shape, threads) the implementations produce


def test_cell_key_is_stable_and_round_trips():
    c = cell(length=4096, d_model=64)
    assert c.key == "a:table:cpu:4096x64:float32:1t"
    assert Cell.from_dict(c.as_dict()) == c
    assert c.bytes_out == 4096 * 64 * 4


def test_choose_convention_reports_why_nothing_fits():
    impl = registry().get("f64-only")
    assert choose_convention(impl, 8, 8, "float64") == ("paper", "")
    convention, why = choose_convention(impl, 8, 8, "float32")
    assert convention is None and "float32" in why


# -- budgets ----------------------------------------------------------------------

def test_prediction_is_affine_through_the_two_largest_smaller_cells():
    history = [ok(cell(64, 64), 1.1e-3), ok(cell(64, 128), 2.0e-3), ok(cell(128, 128), 4.0e-3)]
    guess = budget.predict(cell(1024, 128), history, TIMING)
    slope = (4.0e-3 - 2.0e-3) / (128 * 128 - 64 * 128)
    assert guess.call_s == pytest.approx(4.0e-3 + slope * (1024 - 128) * 128)
    assert "128x128" in guess.basis
    assert guess.cell_s == pytest.approx(TIMING.cell_seconds(guess.call_s))


def test_a_slow_call_is_timed_in_min_rounds_without_calibration_or_a_closing_call():
    """A call whose min_rounds already fill max_time: pytest-benchmark's calibration call and
    closing call would add two calls to the cell and nothing to its rounds."""
    from harness.bench import modes

    class Counting:
        def __init__(self) -> None:
            self.calls, self.how = 0, ""

        def __call__(self, target):        # pytest-benchmark: calibrate, rounds, one call more
            self.how = "calibrated"
            for _ in range(1 + 5 + 1):
                out = target()
            return out

        def pedantic(self, target, setup, rounds, iterations, warmup_rounds):
            self.how = f"pedantic {rounds} {iterations} {warmup_rounds}"
            assert setup is None
            for _ in range(warmup_rounds + rounds):
                out = target()
            return out

    def target() -> int:
        bench.calls += 1
        return bench.calls

    bench = Counting()
    assert modes.rounds_for("", target, "numpy", "cpu", 0.03, 0.1, 5).run(bench) == 5
    assert bench.how == "pedantic 5 1 0" and bench.calls == 5
    bench = Counting()
    modes.rounds_for("", target, "numpy", "cpu", 0.001, 0.1, 5).run(bench)
    assert bench.how == "calibrated"                 # fast: pytest-benchmark sizes the rounds
    assert TIMING.cell_seconds(0.03) == pytest.approx(5 * 0.03 + 3 * 0.03)
    assert TIMING.cell_seconds(0.001) == pytest.approx(0.1 + 5 * 0.001)


def test_prediction_with_one_cell_is_proportional_and_ignores_other_implementations():
    history = [ok(cell(64, 64), 1e-3), ok(cell(64, 64, impl="b"), 1.0)]
    assert budget.predict(cell(128, 64), history, TIMING).call_s == pytest.approx(2e-3)
    assert budget.predict(cell(128, 64, impl="c"), history, TIMING) is None


def test_a_cell_timed_under_load_predicts_nothing():
    """Under one busy core a 2-thread cell took 27x its time: larger cells must not be skipped
    as over budget on its word; a clean sibling still predicts."""
    limits = Limits(cell_budget_s=1.0, timeout_s=100.0)
    two = cell(512, 128, threads=2)
    busy = row(two, Outcome("ok", median_s=0.1, iqr_s=1e-3, others_busy=1.0, cores=2))
    assert budget.skip_reason(cell(8192, 128, threads=2), [busy], TIMING, limits) is None
    assert budget.skip_reason(cell(8192, 128, threads=1), [busy], TIMING, limits) is None
    clean = ok(cell(512, 128, threads=1), 0.1)
    assert budget.skip_reason(cell(8192, 128, threads=1), [busy, clean], TIMING,
                              limits).startswith("predicted")


def test_skip_reasons_name_the_budget_that_is_exceeded():
    limits = Limits(cell_budget_s=1.0, timeout_s=100.0)
    history = [ok(cell(64, 64), 1e-3), ok(cell(128, 64), 2e-3)]
    assert budget.skip_reason(cell(256, 64), history, TIMING, limits) is None
    why = budget.skip_reason(cell(4096, 1024), history, TIMING, limits)
    assert why.startswith("predicted") and "--cell-budget-s 1" in why

    timed_out = [row(cell(64, 64), Outcome("timeout", "killed"))]
    assert "timed out" in budget.skip_reason(cell(128, 64), timed_out, TIMING, limits)

    late = Limits(budget_s=60.0, deadline=1000.0)
    assert "--budget-s 60" in budget.skip_reason(cell(128, 64), history, TIMING, late, now=999.99)
    assert budget.skip_reason(cell(128, 64), history, TIMING, late, now=900.0) is None


# -- journal and table ------------------------------------------------------------

def test_journal_reader_returns_only_new_complete_lines(tmp_path):
    path = tmp_path / journal.FILENAME
    reader = journal.JournalReader(path)
    assert reader.poll() == []
    journal.append(path, ok(cell(), 1e-3))
    with open(path, "a") as f:
        f.write('{"key": "torn')            # a line still being written
    first = reader.poll()
    assert [r["key"] for r in first] == [cell().key] and math.isnan(first[0]["first_call_s"])
    with open(path, "a") as f:
        f.write('"}\n')
    assert [r["key"] for r in reader.poll()] == ["torn"]
    assert reader.poll() == []


def test_bench_csv_is_rebuilt_from_the_journal_parsing_each_line_once(tmp_path, monkeypatch):
    from harness.bench import sweep

    parsed = []
    real = journal._parse
    monkeypatch.setattr(journal, "_parse", lambda line: parsed.append(line) or real(line))
    run = sweep.RunDir(tmp_path, "run", "machine")
    journal.append(tmp_path / journal.FILENAME, ok(cell(64, 64), 1e-3))
    sweep.write_csv(run)
    journal.append(tmp_path / journal.FILENAME, ok(cell(128, 64), 2e-3))   # a worker's new row
    sweep.write_csv(run)
    assert len(parsed) == 2                                   # the first row was not read again
    table = pd.read_csv(tmp_path / results.FILENAME)
    assert sorted(table["key"]) == sorted([cell(64, 64).key, cell(128, 64).key])


def test_tidy_adds_gbps_and_the_fastest_roof_of_the_same_output():
    rows = [ok(cell(64, 64), 4e-6),
            ok(cell(64, 64, impl="roof-slow", is_roof=True), 2e-6),
            ok(cell(64, 64, impl="roof-fast", is_roof=True), 1e-6),
            ok(cell(64, 64, threads=2), 3e-6),                        # no roof at 2 threads
            row(cell(128, 64), Outcome("error", "boom")),
            ok(cell(128, 64), 8e-6)]                                  # recorded again: last wins
    df = results.tidy(rows, "run", "machine").set_index("key")
    assert list(df.columns) == results.COLUMNS[:-1]
    one = df.loc[cell(64, 64).key]
    assert one["roof_s"] == 1e-6 and one["roof_ratio"] == pytest.approx(4.0)
    assert one["gbps"] == pytest.approx(64 * 64 * 4 / 4e-6 / 1e9)
    assert df.loc[cell(64, 64, impl="roof-slow", is_roof=True).key, "roof_ratio"] == pytest.approx(2)
    assert math.isnan(df.loc[cell(64, 64, threads=2).key, "roof_ratio"])
    assert df.loc[cell(128, 64).key, "status"] == "ok" and len(df) == 5
    assert (df["run_id"] == "run").all()


def test_exit_descriptions_name_the_signal():
    assert describe_exit(-11) == "killed by signal SIGSEGV"
    assert describe_exit(3) == "exited with code 3"


def test_outcome_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="status must be one of"):
        Outcome("fine")


def test_peak_memory_counts_temporaries_freed_within_the_call():
    """tracemalloc for NumPy, and the resident-set high-water mark where tracemalloc is blind:
    both must see a 64 MB temporary that is gone by the time the call returns."""
    def call():
        temporary = np.ones(8_000_000)   # 64 MB, freed before returning
        return np.ones(1_000_000) + temporary[:1_000_000]

    used, method = peak.of_call(call, "numpy", "cpu")
    assert method == "tracemalloc" and used >= 64e6
    if not host.can_reset_peak():
        pytest.skip("no /proc/self/clear_refs here: the rss-peak method is not used")
    # in a fresh process: the meter is a lower bound (memory malloc reuses from its pool is
    # already resident), and after a whole test session's imports that pool may hold 64 MB
    fresh = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import numpy as np
        from harness.backends import host
        from harness.bench import peak
        def call():
            temporary = np.ones(8_000_000)
            return np.ones(1_000_000) + temporary[:1_000_000]
        print(*peak.of_call(call, "torch", "cpu"), host._rss_delta(call))
        """)], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent)
    used, method, delta = fresh.stdout.split()
    assert method == "rss-peak" and int(used) >= 48e6, fresh.stderr   # some pages resident already
    assert int(delta) < 32e6   # what the after-minus-before delta saw: 8 MB


def test_only_full_runs_the_conventions_study_and_quick_refuses_full(tmp_path, capsys):
    from harness import cli
    from harness.bench.cli import post_verbs

    table = [i for i in registry().all() if i.workload == "table"]
    assert post_verbs(table, full=True) == ["verify", "conventions", "precision", "roofs"]
    assert post_verbs(table) == ["verify", "precision", "roofs"]
    assert post_verbs(table, quick=True) == post_verbs([], full=True) == ["verify", "precision"]
    assert cli.main(["bench", "--quick", "--full", "--dry-run", "--out", str(tmp_path)]) == 2
    assert "--full and --quick" in capsys.readouterr().err


def test_a_sweeps_post_steps_take_their_quick_case_lists():
    """verify on the quick cases of what was timed, precision at its quick probes: the full
    studies are their own verbs (`nox -s verify`, `python -m harness precision`)."""
    import pandas as pd

    from harness.bench.cli import post_scopes

    frame = pd.DataFrame({"impl": ["numpy-stack", "roof-fill"], "dtype": ["float32", "float16"],
                          "is_roof": [False, True]})
    scopes = post_scopes(frame)
    assert scopes["precision"] == ["--quick"]
    assert scopes["verify"] == ["--quick", "--dtypes", "float32", "--only", "numpy-stack"]


def test_apply_roofs_stand_beside_every_form_they_declare():
    """A pass over q and k reads no layout or position: the roofs take the forms kernels take
    (the recycled ones, writing q and k into one buffer, only with k as many heads as q), and
    hand back q's and k's shapes."""
    from harness.bench.roofs import ROOF_REGISTRY
    from harness.core.kinds import named
    from harness.core.kinds.rotary import RotarySpec

    apply = named("rotary").workload("apply")
    gqa = RotarySpec(16, 8, qk_layout="bshd", kv_heads=2, position_ids="batch")
    same = RotarySpec(16, 8, qk_layout="bshd", position_ids="batch")
    for name in ("roof-numpy-scale-apply", "roof-torch-scale-apply", "roof-recycled-scale-apply",
                 "roof-recycled-torch-scale-apply"):
        roof = ROOF_REGISTRY.get(name)
        recycled = "recycled" in name
        assert (roof.supports(gqa) is None) != recycled
        spec = same if recycled else gqa
        q, k, ids = apply.arguments(spec, 3, 4)
        out = roof.build(spec, q, k, ids)()
        assert [tuple(o.shape) for o in out] == [q.shape, k.shape]
        np.testing.assert_array_equal(np.asarray(out[1], dtype=np.float64), 2 * k)
    assert ROOF_REGISTRY.get("roof-torch-cuda-copy-apply").supports(gqa) is None
