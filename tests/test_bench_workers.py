"""bench's worker groups: which worker times which cells, its thread pool between cells, its
heartbeat, a roof's share of the timing, and no worker where every cell is left out."""

from __future__ import annotations

import pytest

from harness.bench.cells import Cell, Outcome, row
from harness.bench.settings import Limits, Timing
from harness.runs import journal

from tests.test_bench_units import TIMING, cell, ok


def test_jit_implementations_share_a_worker_unless_full_and_later_first_calls_say_shared(monkeypatch):
    from types import SimpleNamespace

    from harness.bench import worker
    from harness.bench.sweep import groups

    jit = [Cell(i, "numba", "cpu", "table", "paper", 64, 64, d, 1) for i in ("a", "b")
           for d in ("float32", "float64")]
    shared = groups(jit)
    assert len(shared) == 1 and shared[0].shared_jit
    alone = groups(jit, cold_starts=True)
    assert len(alone) == 4 and not any(g.shared_jit for g in alone)
    assert not groups([cell(impl="a"), cell(impl="b")])[0].shared_jit      # numpy: not a JIT

    monkeypatch.setattr(worker, "measure", lambda *a, **k: Outcome("ok", build_s=0.1,
                                                                   first_call_s=0.1))
    for shared_jit, second in ((True, "shared"), (False, "cold")):
        w = object.__new__(worker.Worker)
        w.config, w.thread_settings, w.called = SimpleNamespace(shared_jit=shared_jit,
                                                                 timing=TIMING), "t", set()
        labels = [w._measure(None, c, None).first_call for c in (jit[0], jit[2], jit[0])]
        assert labels == ["cold", second, "warm"]


def test_numba_serves_every_thread_count_from_one_worker_and_resizes_its_pool_between_cells():
    from harness.bench import threads
    from harness.bench.sweep import groups

    def at(backend: str, n: int, impl: str = "a") -> Cell:
        return Cell(impl, backend, "cpu", "table", "paper", 64, 64, "float32", n)

    numba = groups([at("numba", 2), at("numba", 1, "b"), at("numba", 1)])
    assert len(numba) == 1 and numba[0].name == "numba-1+2t" and numba[0].threads == 2
    assert [c.threads for c in numba[0].cells] == [2, 1, 1]        # all-core cells first
    torch = groups([at("torch", 1), at("torch", 2)])   # inductor bakes its thread count in
    assert [g.name for g in torch] == ["torch-2t", "torch-1t"]
    assert [g.name for g in groups([at("torch", 2), at("numba", 2), at("numba", 1)])] == [
        "numba-1+2t", "torch-2t"]
    pytest.importorskip("numba")
    import numba as nb

    if nb.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here")
    try:
        assert "numba threads=2" in threads.pin("numba", 2)
        assert "numba threads=1" in threads.pin("numba", 1, again=True)
        assert nb.get_num_threads() == 1
    finally:
        nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)
    with pytest.raises(ValueError, match="cannot resize"):
        threads.pin("tensorflow", 1, again=True)


def test_a_workers_heartbeat_is_written_atomically_but_not_fsynced(tmp_path, monkeypatch):
    """Three heartbeats a cell, read only while the worker lives: an fsync each was 2% of a
    sweep's worker time; every other file bench writes is still fsynced."""
    import os
    from types import SimpleNamespace

    from harness.bench import worker
    from harness.bench.cells import Cell
    from harness.util import io

    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    io.write_text(tmp_path / "bench.csv", "a\n")
    assert len(synced) == 1
    beating = object.__new__(worker.Worker)
    beating.config = SimpleNamespace(heartbeat=str(tmp_path / "beat.json"))
    beating.beats, beating.cell_started = 0, 0.0
    beating._beat(Cell("x", "numpy", "cpu", "table", "paper", 8, 4, "float32", 1))
    assert len(synced) == 1 and '"beat": 1' in (tmp_path / "beat.json").read_text()


def test_a_roof_is_timed_for_a_share_of_max_time_and_a_worker_marks_its_rounds_so():
    """A roof's rounds fill roof_share of max_time (pytest-benchmark reads the marker's
    max_time, the worker's round count and budget read Timing.of); an implementation's do not."""
    from types import SimpleNamespace

    from harness.bench import worker

    roof, impl = cell(is_roof=True, impl="roof-numpy-fill"), cell()
    assert TIMING.of(roof).max_time == pytest.approx(0.5 * TIMING.max_time)
    assert TIMING.of(impl) == TIMING and TIMING.of(roof).of(roof) == TIMING.of(roof)
    assert Timing(roof_share=1.0).of(roof) == Timing(roof_share=1.0)
    assert TIMING.of(roof).cell_seconds(1e-6) < TIMING.cell_seconds(1e-6)
    seen = {}
    meta = SimpleNamespace(fixturenames=["cell"],
                           config=SimpleNamespace(stash={worker.WORKER: SimpleNamespace(
                               config=SimpleNamespace(cells=(impl, roof), timing=TIMING))}),
                           parametrize=lambda name, params, ids: seen.update(params=params))
    worker.pytest_generate_tests(meta)
    marks = [p.marks[0].kwargs["max_time"] for p in seen["params"]]
    assert marks == [TIMING.max_time, pytest.approx(0.5 * TIMING.max_time)]


def test_a_group_whose_every_cell_is_left_out_starts_no_worker(tmp_path, monkeypatch):
    """The supervisor asks the worker's own question (why_skip) of the journal first: a group
    it proves all skipped gets the worker's skip rows and no worker (TensorFlow's imports to
    skip 27 cells took 7 s); one cell left to time and the worker runs them all as before."""
    from harness.bench import worker
    from harness.bench.supervisor import Group, Supervisor

    fast, slow = cell(threads=2, impl="fast"), cell(threads=2, impl="slow")
    for c, t in ((fast, 1e-3), (slow, 1.0)):
        journal.append(tmp_path / journal.FILENAME, ok(c, t))
    rows: list[dict] = []
    supervisor = Supervisor(tmp_path, (), TIMING, Limits(), rows.append)
    started: list[tuple] = []
    monkeypatch.setattr(supervisor, "_attempt",
                        lambda group, pending: started.append(tuple(pending)) or
                        {c.key for c in pending})
    behind = [cell(threads=1, impl="slow"), cell(128, threads=1, impl="slow")]
    history = journal.read_all(tmp_path / journal.FILENAME)
    reasons = [worker.why_skip(behind[0], history, TIMING, Limits())]
    history.append(row(behind[0], Outcome("skip", reasons[0])))
    reasons.append(worker.why_skip(behind[1], history, TIMING, Limits()))
    assert all(reasons)
    supervisor.run(Group("numpy", 1, tuple(behind)))
    assert not started
    assert [r["key"] for r in rows] == [c.key for c in behind]
    assert [(r["status"], r["reason"]) for r in rows] == [("skip", why) for why in reasons]
    supervisor.run(Group("numpy", 1, (*behind, cell(threads=1, impl="fast"))))
    assert len(started) == 1 and len(started[0]) == 3
