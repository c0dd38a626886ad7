"""The compare gate decides on raw rounds with a rank test: the same code passes, even under
load; a real 1.5x slowdown fails; runs from other machines are refused."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import harness.cli
from harness.report import gate
from harness.report.compare import changes
from harness.report.load import load_run
from tests.test_bench import PLUGINS, bench
from tests.test_report import no_plots  # noqa: F401  (a fixture)

#: Times real runs: `nox -s e2e` runs these after its parallel part, by themselves.
pytestmark = pytest.mark.alone

RNG = np.random.default_rng(7)


def rounds(median_s: float, n: int = 40, spread: float = 0.05) -> list[float]:
    """Timed rounds around `median_s`, with a few long ones (another process got the core)."""
    values = median_s * (1 + spread * RNG.standard_normal(n))
    values[:: max(n // 8, 1)] *= 1.5
    return list(values)


def test_rank_test_and_ratio_must_both_say_slower():
    base, same, slow = rounds(1e-3), rounds(1e-3), rounds(1.5e-3)
    assert not gate.judge(1e-3, 1e-3, 1e-4, base, same, 10).slower
    assert gate.judge(1e-3, 1.5e-3, 1e-4, base, slow, 10).slower
    # a significant 5% rise is still under a 10% threshold
    many = rounds(1e-3, n=64, spread=0.005)
    assert not gate.judge(1e-3, 1.05e-3, 1e-5, many, [v * 1.05 for v in many], 10).slower
    # a 12% rise of the median that the rounds do not support (heavily overlapping)
    wide_base, wide_new = rounds(1e-3, spread=0.4), rounds(1e-3, spread=0.4)
    verdict = gate.judge(1e-3, 1.12e-3, 0.0, wide_base, wide_new, 10)
    assert not verdict.slower and verdict.p_value > gate.ALPHA and verdict.test == gate.TEST


def test_few_rounds_need_every_new_round_above_every_base_round():
    assert gate.alpha(3, 3) == pytest.approx(1 / 20)
    assert gate.judge(1.0, 2.0, 0.0, [1.0, 1.1, 0.9], [2.0, 2.1, 1.9], 10).slower
    assert not gate.judge(1.0, 2.0, 0.0, [1.0, 1.1, 2.5], [2.0, 2.1, 1.9], 10).slower


def test_runs_without_raw_rounds_fall_back_to_medians_and_iqrs():
    verdict = gate.judge(1e-3, 1.5e-3, 1e-4, (), (), 10)
    assert verdict.slower and verdict.test == gate.FALLBACK
    assert not gate.judge(1e-3, 1.5e-3, 1e-3, (), (), 10).slower     # inside the spread


def test_other_machines_and_thread_counts_are_named():
    env = {"cpu_model": "A", "cores_logical": 2, "gpu": None}
    assert gate.machine_differences(env, dict(env)) == []
    assert gate.machine_differences(env, {**env, "cores_logical": 4}) == [
        "cores_logical: 2 (new) vs 4 (base)"]
    one, two = pd.DataFrame({"threads": [1, 2]}), pd.DataFrame({"threads": [1]})
    assert gate.thread_difference(one, one) == ""
    assert "new 1, 2, base 1" in gate.thread_difference(one, two)


def test_the_gate_refuses_runs_from_other_machines(tmp_path, capsys):
    from tests.test_report import SMALL, bench_rows, write_run

    base = write_run(tmp_path, "run-base", bench=bench_rows(**SMALL))
    new = write_run(tmp_path, "run-new", bench=bench_rows(run_id="run-new", **SMALL))
    for run, cpu in ((base, "CPU A"), (new, "CPU B")):
        env = json.loads((run / "env.json").read_text()) if (run / "env.json").exists() else {}
        (run / "env.json").write_text(json.dumps({**env, "cpu_model": cpu}))
    code = harness.cli.main(["report", str(new), "--compare", str(base), "--fail-slower", "10"])
    assert code == 2 and "cpu_model: CPU B (new) vs CPU A (base)" in capsys.readouterr().err


# -- end to end: real sweeps under a synthetic load -------------------------------------------

@pytest.fixture
def busy_core():
    """A process spinning on one core for the length of the test."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield proc
    proc.kill()
    proc.wait()


def gate_run(out, slowdown: float = 1.0):
    """bt-gate (0.4 ms a call x `slowdown`) and the NumPy tables of libraries (whose cells, with
    the roofs, measure the noise between the runs) at six sizes, one thread: cells of 10 us and
    less moved 2x between two runs beside a busy core, two sizes of one implementation together.
    `--full`: nothing left out as far behind, so bt-gate is timed at every size (an
    implementation timed at one size alone can only be a lone rise: harness.report.gate)."""
    proc, run_dir = bench(out, "--plugin", str(PLUGINS / "timed.py"), "--only", "bt-gate",
                          "--only", "lib-*", "--lengths", "256,1024,4096", "--d-models", "64,256",
                          "--max-time", "0.05", "--full", env={"BT_SLOWDOWN": str(slowdown)})
    assert proc.returncode == 0, proc.stderr
    return run_dir


def stormy(new, base) -> str:
    """Why the gate cannot judge bt-gate in `new` ('' when it can)."""
    found = [c for c in changes(load_run(new).bench, load_run(base).bench) if c.impl == "bt-gate"]
    return next((c.unjudged for c in found if c.unjudged), "" if found else "bt-gate not compared")


def compare(new, base, capsys) -> tuple[int, str, str]:
    """`report NEW --compare BASE --fail-slower 10` in this process (the sweeps ran apart; the
    plots, which the gate never reads, are not drawn): its exit code, stdout and stderr."""
    code = harness.cli.main(["report", str(new), "--compare", str(base), "--fail-slower", "10"])
    return code, *capsys.readouterr()


def test_same_code_twice_under_load_passes_and_a_planted_slowdown_fails(tmp_path, busy_core, capsys,
                                                                        no_plots):
    """Beside one busy core, three sweeps at one thread (its core free): the same code twice
    passes, the noise between the runs measured and said; bt-gate made 1.5x slower fails where
    that noise lets a 1.5x slowdown be seen (else the test skips, naming the gate's bar); where
    the machine's own load was more than the one busy core, the gate judges nothing, and the
    test skips saying so."""
    base = gate_run(tmp_path / "base")
    last = json.loads((base / "cells.jsonl").read_text().splitlines()[-1])
    assert len(last["samples_s"]) >= 2                 # raw rounds are in the journal
    again = gate_run(tmp_path / "again")
    slow = gate_run(tmp_path / "slow", slowdown=1.5)
    for run in (again, slow):
        if stormy(run, base):
            pytest.skip(f"the machine was busier than one busy core: {stormy(run, base)}")
    code, out, err = compare(again, base, capsys)
    assert code == 0, out + err
    assert "noise between the runs, cpu 1 thread, small" in out
    bars = [c.noise.allowed if c.noise else math.inf
            for c in changes(load_run(slow).bench, load_run(base).bench) if c.impl == "bt-gate"]
    if max(bars) > 1.4:
        pytest.skip(f"the noise between these runs hides a 1.5x slowdown: the gate's bar was "
                    f"{max(bars):.2f}x (it says so, and passes the same code)")
    code, out, err = compare(slow, base, capsys)
    assert code == 1, out + err
    assert "bt-gate" in {line.split()[3] for line in out.splitlines() if line.startswith("SLOWER")}


def test_a_gate_that_judged_the_speed_of_few_cells_says_so():
    from harness.report.compare import Overlap
    assert "MOSTLY NOT JUDGED: 9 of 261" in Overlap(300, 301, 300, 261, flagged=252).describe()
    assert "NOT JUDGED" not in Overlap(300, 301, 300, 261, flagged=130).describe()


def test_only_load_and_clock_flags_of_the_new_run_leave_a_cell_out():
    flags = pd.DataFrame({"flags": ["", "load: 1.9 cores busy", "threads: 5x slower at 2 threads",
                                    "clock: its timer counted 0.4 s of 5 s", "implausible: 0.1x"]})
    assert gate.left_out(flags).tolist() == [False, True, False, True, False]

