"""The compare gate measures the noise between the two runs it judges: unchanged code that the
machine moved passes; a planted slowdown of an implementation beyond that noise fails; a thread
count the new run timed beside more busy cores than it left free is not judged at all."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.report import fmt, gate, noise
from harness.report.compare import changes, decide, overlap, slower
from tests.test_load_flags import cell, frame, ok

SIZES = [(64, 64), (64, 128), (128, 64), (128, 128), (256, 64), (256, 128)]
IMPLS = ["a", "b", "c", "d"]
ROOFS = ["roof-fill", "roof-stream"]


def run(moved: dict[tuple[str, int], float], others: float = 1.0, flagged: set = frozenset(),
        slowdown: dict[str, float] | None = None, threads: int = 1,
        ran: float = math.nan) -> pd.DataFrame:
    """Four implementations and two roofs at six small sizes, each cell 1 us x its size factor x
    `moved[(impl, size index)]` (the machine's doing) x `slowdown[impl]` (the code's), with 16
    rounds spread 1% around the median, timed beside `others` busy cores with `ran` of the
    worker's threads running; cells of `flagged` implementations are flagged for load."""
    rows = []
    for impl in IMPLS + ROOFS:
        for i, (length, d_model) in enumerate(SIZES):
            t = 1e-6 * (1 + i) * moved.get((impl, i), 1.0) * (slowdown or {}).get(impl, 1.0)
            row = ok(cell(impl, threads, length, d_model, is_roof=impl.startswith("roof")), t,
                     others=2.0 if impl in flagged else others)
            rows.append({**row, "threads_ran": ran})
    df = frame(rows)
    df["samples_s"] = [tuple(m * (1 + 0.01 * k / 16) for k in range(-8, 8)) for m in df["median_s"]]
    return df


def machine(spread: float, seed: int) -> dict[tuple[str, int], float]:
    """How a busy machine moved each cell between two runs: log-normal with this spread, and
    two cells alone by 1.4-1.5x (as measured beside one busy core: harness.report.gate)."""
    rng = np.random.default_rng(seed)
    moved = {(impl, i): math.exp(rng.normal(0, spread))
             for impl in IMPLS + ROOFS for i in range(len(SIZES))}
    return {**moved, ("a", 5): 1.5, ("d", 1): 1.4}


def test_same_code_moved_by_a_busy_machine_passes_and_a_planted_slowdown_fails():
    base, again = run({}), run(machine(0.05, seed=1))
    assert max(c.new_s / c.base_s for c in changes(again, base)) > 1.1    # beyond --fail-slower 10
    assert slower(changes(again, base), 10) == []
    slow = run(machine(0.05, seed=2), slowdown={"c": 1.5})
    assert {c.impl for c in slower(changes(slow, base), 10)} == {"c"}


def test_a_lone_cell_the_machine_moved_is_named_a_whole_implementation_that_moved_fails():
    """Under load single cells of unchanged code move 1.3-1.6x, each alone (the implementation at
    its other sizes did not move); a slowdown of the code moves its cells together."""
    base = run({})
    lone = run({("a", 5): 1.8, ("b", 2): 1.6})
    assert max(c.new_s / c.base_s for c in changes(lone, base)) > 1.75
    decision = decide(changes(lone, base), 10)
    assert decision.slower == () and {c.impl for c in decision.lone} == {"a", "b"}
    assert any("lone rise, not failing" in line for line in decision.describe(10))
    moved = run({("b", i): 1.6 for i in range(4)})
    assert {c.impl for c in slower(changes(moved, base), 10)} == {"b"}


def test_a_change_to_most_of_a_group_is_judged_against_its_roofs_or_the_other_cells():
    """The roofs are the controls where a group has enough of them; else the judged
    implementation's own cells are left out: a slowdown of most of the group (a backend-wide
    change) must not read as the machine's drift."""
    base = run({})
    most = run({}, slowdown={"a": 1.5, "b": 1.5, "c": 1.5})
    assert {c.noise.cells for c in changes(most, base)} == {12}             # the roofs
    assert {c.impl for c in slower(changes(most, base), 10)} == {"a", "b", "c"}
    few_roofs = [f[~f["impl"].eq("roof-stream")] for f in (base, run({}, slowdown={"a": 1.5}))]
    assert {c.noise.cells for c in changes(few_roofs[1], few_roofs[0])} == {24}   # 30 less its 6
    assert {c.impl for c in slower(changes(few_roofs[1], few_roofs[0]), 10)} == {"a"}


def test_without_the_noise_the_same_code_on_a_slower_machine_fails(monkeypatch):
    """A machine 1.25x slower in the new run moves every series: the noise excuses its drift;
    the rule the noise replaced (the medians' percentage and a rank test) fails unchanged code."""
    base = run({})
    again = run({k: 1.25 * v for k, v in machine(0.05, seed=3).items()})
    assert slower(changes(again, base), 10) == []
    monkeypatch.setattr(noise.Noise, "allowed", property(lambda self: 1.0))
    assert slower(changes(again, base), 10) != []


def test_the_noise_is_measured_per_group_and_said():
    base, again = run({}), run(machine(0.05, seed=1))
    found = {c.noise.group for c in changes(again, base)}
    assert found == {"cpu 1 thread, small"}
    assert {c.noise.cells for c in changes(again, base)} == {12}     # two roofs at six sizes
    lines = decide(changes(again, base), 10).describe(10)
    assert lines[0] == "judged 24 cell(s) against the noise between the runs"
    assert sum("noise between the runs, cpu 1 thread, small: 12 cells" in line for line in lines) == 1
    from scipy.stats import t
    n = noise.measure("g", np.log([1.0, 1.1, 0.9, 1.2, 1.0]), level=1e-3)
    assert n.drift == pytest.approx(0.0) and n.spread == pytest.approx(1.4826 * math.log(1.1), rel=0.2)
    assert n.allowed == pytest.approx(math.exp(t.ppf(1 - 1e-3, 4) * n.spread * math.sqrt(1.2)))


def test_the_level_per_cell_is_the_family_alpha_over_the_implementations_that_could_fail():
    """Bonferroni as if one cell could fail its implementation: its cells share a worker
    process, whose luck moves them together, so a second cell is no independent evidence."""
    assert noise.cell_level([3] * 70) == pytest.approx(noise.FAMILY_ALPHA / 70)
    assert noise.cell_level([3] * 70 + [1] * 50) == pytest.approx(noise.FAMILY_ALPHA / 70)
    assert noise.cell_level([1, 1]) == noise.FAMILY_ALPHA


def test_a_slower_machine_excuses_its_drift_a_faster_one_earns_no_credit():
    slower_machine = noise.measure("g", np.full(10, math.log(1.3)), level=1e-3)
    faster_machine = noise.measure("g", np.full(10, math.log(0.7)), level=1e-3)
    assert slower_machine.allowed == pytest.approx(1.3)
    assert faster_machine.allowed == pytest.approx(1.0)


def test_a_thread_count_timed_beside_more_busy_cores_than_it_left_free_is_not_judged():
    """Three of four implementations timed beside two busy cores (flagged), the fourth beside
    one: the run was timed under a load that came and went; even 3x slower the fourth is not
    judged, and the overlap says so. With one implementation so, the median cell had its core."""
    base = run({})
    stormy = run({}, flagged={"a", "b", "c"}, slowdown={"d": 3.0})
    assert slower(changes(stormy, base), 10) == []
    assert all(c.unjudged == gate.STORM for c in changes(stormy, base))
    assert "SPEED MOSTLY NOT JUDGED" in overlap(stormy, base).describe()
    calm = run({}, flagged={"a"}, slowdown={"d": 3.0})
    assert {c.impl for c in slower(changes(calm, base), 10)} == {"d"}


def test_work_on_one_thread_timed_at_two_beside_one_busy_core_is_judged_a_parallel_one_not():
    """NumPy "at 2 threads" runs on one: beside one busy core of two it had its core, so its
    cells are judged and a planted slowdown fails; a kernel whose two threads ran is flagged."""
    base = run({}, threads=2, others=0.0, ran=1)
    one = run(machine(0.05, seed=2), threads=2, others=1.0, ran=1, slowdown={"c": 1.5})
    assert {c.impl for c in slower(changes(one, base), 10)} == {"c"}
    assert all(c.judged for c in changes(one, base))
    both = run(machine(0.05, seed=2), threads=2, others=1.0, ran=2, slowdown={"c": 1.5})
    assert changes(both, base) == [] and slower(changes(both, base), 10) == []   # all flagged


def test_a_cell_whose_group_is_too_small_to_measure_is_not_judged_even_on_a_quiet_machine():
    """Fewer than MIN_CELLS other cells: no noise to judge against, and two quiet runs on this
    VM drift 10-20% apart, so the cell is not judged, whatever the load."""
    base = frame([ok(cell("x", 1), 1e-3), ok(cell("y", 1), 1e-3)])
    new = frame([ok(cell("x", 1), 2e-3, others=1.0), ok(cell("y", 1), 2e-3, others=0.1)])
    for df in (base, new):
        df["samples_s"] = [tuple(m * (1 + 0.001 * k) for k in range(8)) for m in df["median_s"]]
    decision = decide(changes(new, base), 10)
    assert decision.judged == 0 and decision.slower == ()
    assert decision.unjudged == {gate.UNMEASURED: 2}
    assert "SPEED MOSTLY NOT JUDGED" in overlap(new, base).describe()


def test_the_reports_change_table_bolds_what_the_gate_calls_slower_not_what_beats_the_iqrs():
    """A cell 15% slower with IQRs of 0.3% is beyond the spread of each run but within the noise
    between them (spread 0.05): plain; a planted 1.5x is bold; a cell not judged carries a dagger."""
    from types import SimpleNamespace

    from harness.report import sections

    base = run({})
    new = run({**machine(0.05, seed=2), ("b", 0): 1.15}, slowdown={"c": 1.5})
    text = sections.change(changes(new, base), SimpleNamespace(key="base-run"))
    slowed = [c for c in changes(new, base) if c.impl == "c"]
    assert all(f"**{fmt.pct(c.pct)}**" in text for c in slowed)
    [moved] = [c for c in changes(new, base) if (c.impl, c.length, c.d_model) == ("b", 64, 64)]
    assert moved.pct > 10 and f"**{fmt.pct(moved.pct)}**" not in text and fmt.pct(moved.pct) in text
    assert "6 of them with their implementation's other cells agreeing" in text
    tiny = base[base["impl"].isin(["a", "b"]) & (base["length"] == 64)]   # 2 others: unmeasured
    assert {c.judged for c in changes(tiny, tiny)} == {False}
    assert f"{fmt.pct(0.0)} †" in sections.change(changes(tiny, tiny), SimpleNamespace(key="b"))
