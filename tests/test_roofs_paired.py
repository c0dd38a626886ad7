"""The roofs step: a pick and its roofs timed in rotating rounds, judged round by round."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.bench import pairing
from harness.bench.cells import Cell, Outcome, row
from harness.report import bounds
from harness.runs import results
from harness.bench import paired as roofs


class Machine:
    """A fake clock and contenders whose calls cost `cost` times the machine's current
    slowness: a step change halfway, as when the VM's bandwidth switches."""

    def __init__(self, step_at: float, slower: float) -> None:
        self.now, self.step_at, self.slower = 0.0, step_at, slower

    def clock(self) -> float:
        return self.now

    def costing(self, cost: float):
        def call() -> None:
            self.now += cost * (self.slower if self.now >= self.step_at else 1.0)
        return call


def test_rounds_rotate_so_each_contender_leads_once_in_as_many_rounds():
    names = ["pick", "roof-a", "roof-b"]
    firsts = [pairing.order(names, r)[0] for r in range(3)]
    assert sorted(firsts) == sorted(names)
    assert all(sorted(pairing.order(names, r)) == sorted(names) for r in range(7))


def test_a_change_of_the_machines_speed_midway_leaves_the_ratio_alone():
    """The pick costs 1.5x the roof; the machine gets 3x slower halfway through. Round by
    round the ratio stays 1.5 (but in the round the change falls in); the two medians of a pick
    timed before the change and a roof timed after it (what the sweep divides) would say 0.5."""
    machine = Machine(step_at=0.5, slower=3.0)
    contenders = [pairing.Contender("pick", machine.costing(1.5e-3)),
                  pairing.Contender("roof", machine.costing(1e-3))]
    rounds = pairing.interleaved(contenders, rounds=40, clock=machine.clock, round_s=0.01,
                                 pause=lambda s: None)
    each = pairing.ratios(rounds, "pick", ["roof"])
    assert len(each) >= 40 and sum(r != pytest.approx(1.5) for r in each) <= 1
    assert max(rounds["roof"]) == pytest.approx(3 * min(rounds["roof"]))   # the step happened


def test_an_in_place_kernels_reset_is_not_timed_and_the_floor_of_timed_seconds_holds():
    machine = Machine(step_at=1e9, slower=1.0)
    resets = []
    kernel = pairing.Contender("inplace", machine.costing(1e-3),
                               reset=lambda: (resets.append(1), machine.costing(1.0)()))
    rounds = pairing.interleaved([kernel], rounds=2, min_s=0.5, clock=machine.clock,
                                 round_s=0.01, pause=lambda s: None)
    assert all(v == pytest.approx(1e-3) for v in rounds["inplace"])   # 1 s resets left out
    assert len(rounds["inplace"]) >= 0.5 / 1e-3       # one call a round (a reset each), to 0.5 s
    assert len(resets) >= len(rounds["inplace"])


def test_a_first_call_round_is_one_call_of_a_fresh_build_the_build_untimed():
    machine = Machine(step_at=1e9, slower=1.0)
    builds = []
    first = pairing.Contender("fresh", machine.costing(2e-3),
                              reset=lambda: (builds.append(1), machine.costing(0.5)()), once=True)
    rounds = pairing.interleaved([first], rounds=5, clock=machine.clock, round_s=0.01,
                                 pause=lambda s: None)
    assert rounds["fresh"] == [pytest.approx(2e-3)] * 5 and len(builds) == 5


def test_outputs_past_the_steps_budget_are_skipped_unbuilt(monkeypatch):
    import harness

    monkeypatch.setattr(harness, "implementations", lambda plugins=(): None)
    monkeypatch.setattr(pairing, "contender", lambda cell: pytest.fail("built past the budget"))
    lines: list[dict] = []
    pairing.run({"threads": 1, "rounds": 2, "min_s": 0, "first_rounds": 2, "budget_s": 0.0,
                 "outputs": [{"id": "a", "cells": [{"backend": "numpy"}]}, {"id": "b", "cells": []}]},
                lines.append)
    assert lines[0] == {"ready": True}
    assert [(x["id"], x["status"]) for x in lines[1:]] == [("a", "skip"), ("b", "skip")]
    assert "budget of 0 s" in lines[1]["reason"]


def _cell(impl: str, threads: int = 2, is_roof: bool = False, dtype: str = "float32") -> Cell:
    return Cell(impl, "numpy", "cpu", "timestep", "adm", 64, 64, dtype, threads,
                is_roof=is_roof, kind="timestep")


def _bench(times: dict[str, float], first: dict[str, float] = {}) -> pd.DataFrame:
    rows = [row(_cell(name, is_roof=name.startswith("roof-")),
                Outcome("ok", median_s=t, iqr_s=t / 1e3, first_call_s=first.get(name, 10 * t)))
            for name, t in times.items()]
    return results.tidy(rows, "run", "machine")


def test_the_step_times_the_fastest_that_passes_a_near_runner_up_and_two_binding_roofs():
    bench = _bench({"fast-but-wrong": 1e-3, "best": 2e-3, "near": 2.8e-3, "far": 9e-3,
                    "roof-sincos-timestep": 4e-3, "roof-sincos-numpy-timestep": 5e-3,
                    "roof-sincos-torch-timestep": 7e-3, "roof-recycled-fill-timestep": 1e-4,
                    "roof-numpy-fill-timestep": 1e-3})
    verify = pd.DataFrame({"impl": ["fast-but-wrong", "best", "near", "far"],
                           "dtype": ["float32"] * 4, "status": ["fail", "pass", "pass", "pass"]})
    [output] = roofs.outputs(bench, verify)
    assert [p["impl"] for p in output.picks] == ["best", "near"]
    # compute binds here: the sincos roofs, the two fastest of them, never the fill
    assert [r["impl"] for r in output.roofs] == ["roof-sincos-timestep", "roof-sincos-numpy-timestep"]
    assert {c["impl"] for c in output.cells} == {"best", "near", "roof-sincos-timestep",
                                                 "roof-sincos-numpy-timestep"}
    json.dumps([output.cells, output.first_cells])      # what the worker's config carries
    # first calls: the fastest two that pass and build afresh, against allocate-and-fill roofs
    assert [p["impl"] for p in output.first_picks] == ["best", "near"]
    assert [r["impl"] for r in output.first_roofs] == ["roof-numpy-fill-timestep"]
    quick_start = _bench({"best": 2e-3, "rotary-inplace": 1e-3, "quick-start": 3e-3,
                          "roof-sincos-timestep": 4e-3, "roof-numpy-fill-timestep": 1e-3,
                          "roof-recycled-fill-timestep": 1e-4},
                         first={"best": 9e-3, "quick-start": 4e-3, "rotary-inplace": 1e-4,
                                "roof-recycled-fill-timestep": 1e-5})
    passing = pd.DataFrame({"impl": ["best", "rotary-inplace", "quick-start"],
                            "dtype": ["float32"] * 3, "status": ["pass"] * 3})
    [output] = roofs.outputs(quick_start, passing)
    assert [p["impl"] for p in output.first_picks] == ["quick-start", "best"]
    assert [r["impl"] for r in output.first_roofs] == ["roof-numpy-fill-timestep"]
    lone = roofs.outputs(_bench({"best": 2e-3, "far": 9e-3, "roof-sincos-timestep": 4e-3}), verify)
    assert [p["impl"] for p in lone[0].picks] == ["best"]
    # every roof flagged for load in the sweep: bench.csv names no binding roof; still paired
    unbound = bench.assign(roof_bound=float("nan"), roof_s=float("nan"))
    [output] = roofs.outputs(unbound, verify)
    assert [r["impl"] for r in output.roofs] == ["roof-sincos-timestep", "roof-sincos-numpy-timestep"]


def test_the_picks_sibling_in_other_memory_is_paired_however_far_the_sweep_put_it():
    """The sweep timed the float32 rotary cache's recycled variant 1.82x behind its fresh one, in
    another bandwidth regime; paired, it is the one at the roof."""
    bench = _bench({"cache": 1e-3, "cache-recycled": 1.82e-3, "other": 1.9e-3,
                    "other-recycled": 1.95e-3, "roof-numpy-fill-timestep": 1e-3})
    passing = pd.DataFrame({"impl": ["cache", "cache-recycled", "other", "other-recycled"],
                            "dtype": ["float32"] * 4, "status": ["pass"] * 4})
    [output] = roofs.outputs(bench, passing)
    assert [p["impl"] for p in output.picks] == ["cache", "cache-recycled"]
    failing = passing.assign(status=["pass", "fail", "pass", "pass"])
    assert [p["impl"] for p in roofs.outputs(bench, failing)[0].picks] == ["cache"]
    flipped = _bench({"cache": 1.9e-3, "cache-recycled": 1e-3, "roof-numpy-fill-timestep": 1e-3})
    assert [p["impl"] for p in roofs.outputs(flipped, passing)[0].picks] == ["cache-recycled",
                                                                            "cache"]


def test_a_worker_whose_clock_runs_slow_is_not_believed():
    output = roofs.Output("timestep/float32", ({"impl": "best", "workload": "timestep",
                                                "dtype": "float32", "roof_ratio": 1.0},),
                          ({"impl": "roof-a"},))
    line = {"status": "ok", "own_s": 0.1, "rounds_s": {"best": [2.0, 2.0], "roof-a": [1.0, 1.0]}}
    [honest] = roofs.judge(output, {**line, "own_s": 2.5}, 3.0, 2)
    assert honest["status"] == "ok" and honest["ratio"] == 2.0 and honest["rounds"] == 2
    [caught] = roofs.judge(output, line, 3.0, 2)
    assert caught["status"] == "clock" and "ratio" not in caught


def test_rounds_timed_while_other_processes_held_the_cores_are_flagged_load():
    """Two threads on two cores beside a busy one: every barrier waits for a descheduled
    thread, and pick and roof both slow down tenfold - flagged, and the table says so."""
    output = roofs.Output("timestep/float32", ({"impl": "best", "workload": "timestep",
                                                "dtype": "float32", "roof_ratio": 1.0},),
                          ({"impl": "roof-a"},))
    line = {"status": "ok", "own_s": 2.5, "rounds_s": {"best": [2.0], "roof-a": [1.0]},
            "cores": 2, "load_before": 1.0, "load_after": 1.0}
    [busy] = roofs.judge(output, {**line, "others_busy": 1.0}, 3.0, 2)
    [quiet] = roofs.judge(output, {**line, "others_busy": 0.1}, 3.0, 2)
    assert busy["flags"].startswith("load:") and quiet["flags"] == ""
    from tests.test_report_bounds import _bench as bounds_bench

    verify = pd.DataFrame({"impl": ["timestep-numba"], "dtype": ["float32"], "status": ["pass"]})
    paired = pd.DataFrame([{**busy, "impl": "timestep-numba"}])
    assert bounds.table(bounds_bench(), verify, paired).iloc[0][
        "x roof, 2 threads, paired"] == "2x (2.00-2.00), under load"


def test_the_roof_table_shows_the_paired_ratio_and_names_a_runner_up_that_came_out_ahead():
    from tests.test_report_bounds import _bench as bounds_bench

    verify = pd.DataFrame({"impl": ["fast-but-wrong", "timestep-numba"], "dtype": ["float32"] * 2,
                           "status": ["fail", "pass"], "grade": ["", "exact"]})
    paired = pd.DataFrame({"workload": ["timestep"] * 2, "dtype": ["float32"] * 2,
                           "impl": ["timestep-numba", "runner-up"], "status": ["ok", "ok"],
                           "ratio": [1.1, 0.9], "ratio_p25": [1.0, 0.8], "ratio_p75": [1.2, 1.0]})
    line = bounds.table(bounds_bench(), verify, paired).iloc[0]
    assert line["x roof, 2 threads, paired"] == "0.9x (0.80-1.00) runner-up"
    assert line["x roof, 2 threads, sweep"] == "0.5x" and line["grade"] == "exact"
    line = bounds.table(bounds_bench(), verify, paired.iloc[:1]).iloc[0]
    assert line["x roof, 2 threads, paired"] == "1.1x (1.00-1.20)"
    assert "x roof, 2 threads, paired" not in bounds.table(bounds_bench(), verify).columns
    first = pd.DataFrame({"measure": ["call", "first call"], "workload": ["timestep"] * 2,
                          "dtype": ["float32"] * 2, "impl": ["timestep-numba"] * 2,
                          "status": ["ok", "ok"], "ratio": [1.1, 1.25], "ratio_p25": [1.0, 1.2],
                          "ratio_p75": [1.2, 1.3]})
    line = bounds.table(bounds_bench(), verify, first).iloc[0]
    assert line["x roof, 2 threads, paired"] == "1.1x (1.00-1.20)"
    assert line["first call x fresh fill, paired"] == "1.25x (1.20-1.30)"


@pytest.mark.e2e
def test_a_worker_that_dies_or_hangs_costs_only_its_own_output(tmp_path, monkeypatch):
    """Three outputs: the first's implementation kills its worker, the third's hangs. The
    second is timed in a new worker, the third is a timeout, and paired.csv has all three."""
    from harness import cli

    monkeypatch.setattr(roofs, "OUTPUT_TIMEOUT_S", 4.0)
    table = {"float16": "bt-exit", "float32": "bt-ok", "float64": "bt-hang"}
    cells = [(Cell(impl, "numpy", "cpu", "table", "paper", 256, 64, dtype, 2), 1e-4)
             for dtype, impl in table.items()]
    cells += [(Cell("roof-numpy-fill", "numpy", "cpu", "table", "paper", 256, 64, dtype, 2,
                    is_roof=True), 5e-5) for dtype in table]
    results.write(tmp_path, [row(c, Outcome("ok", median_s=t, iqr_s=t / 1e3)) for c, t in cells],
                  "run", "machine")
    paper = {"layout": "interleaved", "freq_shift": 0, "offset": 0, "cos_first": False,
             "base": 10000.0, "scale": 1.0, "d_model": 64, "kind": "table"}
    pd.DataFrame({"impl": list(table.values()), "dtype": list(table), "status": ["pass"] * 3,
                  "grade": ["exact"] * 3, "max_abs_err": [0.0] * 3, **paper}
                 ).to_csv(tmp_path / "verify.csv", index=False)
    code = cli.main(["roofs", str(tmp_path), "--plugin", "tests/bench_plugins/faulty.py"])
    assert code == 0
    paired = pd.read_csv(tmp_path / "paired.csv").set_index("dtype")
    assert paired.loc["float16", "status"] == "error"
    assert "exited with code 3" in paired.loc["float16", "reason"]
    assert paired.loc["float32", "status"] == "ok" and paired.loc["float32", "ratio"] > 0
    assert paired.loc["float64", "status"] == "timeout"
