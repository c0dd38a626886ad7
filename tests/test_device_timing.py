"""GPU timing without a GPU: modes, syncs, L2 flushes and CUDA-graph capture through fakes.

A fake backend stands in for torch/CuPy (a `capture` that records, a `cuda`
check that says yes) and the driver's sync and flush are counted, so every
decision of harness.bench.modes and the device planning is tested on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import backends
from harness.backends import cuda_driver
from harness.backends.base import Backend
from harness.bench import modes
from harness.bench.cells import Cell, Outcome, row
from harness.bench.grid import Grid, plan
from harness.bench.measure import measure
from harness.bench.settings import Timing
from harness.core.registry import Registry
from harness.report import device
from harness.runs.results import tidy


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


@pytest.fixture
def fake_gpu(monkeypatch):
    """A backend 'fakegpu' that sees a device and captures by wrapping; counted driver calls."""
    captured = []

    def capture(fn, calls):
        captured.append((fn, calls))
        outs = [fn() for _ in range(calls)]
        return lambda: outs[-1]

    backend = Backend(name="fakegpu", cuda=lambda: None, capture=capture,
                      peak={"cuda": lambda fn: (fn().nbytes, "fake")})
    monkeypatch.setitem(backends.ADAPTERS, "fakegpu", backend)
    syncs, flush = Counter(), Counter()
    monkeypatch.setattr(cuda_driver, "synchronize", syncs)
    monkeypatch.setattr(cuda_driver, "l2_flush", lambda: flush)
    return {"captured": captured, "syncs": syncs, "flush": flush}


class FakeBenchmark:
    """Records how pytest-benchmark was driven; `stats` as measure() reads them."""

    def __init__(self) -> None:
        self.extra_info: dict = {}
        self.how: tuple = ()

    def __call__(self, target):
        result = target()
        self.how = ("calibrated", result)
        self._stats()
        return result                 # as pytest-benchmark returns a timed call's result

    def pedantic(self, target, setup, rounds, iterations, warmup_rounds):
        for _ in range(rounds):
            setup()
            result = target()
        self.how = ("pedantic", rounds, iterations, warmup_rounds)
        self._stats()
        return result

    def _stats(self):
        stats = type("S", (), dict(median=1e-5, iqr=1e-7, min=1e-5, mean=1e-5, stddev=1e-7,
                                   rounds=5, data=[1e-5] * 5))
        self.stats = type("B", (), {"stats": stats})


def gpu_registry() -> Registry:
    reg = Registry()
    reg.register(name="gpu-table", backend="fakegpu", device="cuda",
                 supports=lambda spec: None)(lambda spec: (lambda: np.zeros((spec.length, spec.d_model),
                                                                            np.float32)))
    return reg


def test_cpu_cells_have_no_mode_and_device_cells_every_mode_their_backend_can(fake_gpu):
    assert modes.modes_for("numpy", "cpu") == ("",)
    assert modes.modes_for("fakegpu", "cuda") == ("sync", "flush", "graph")
    assert modes.modes_for("numba-cuda", "cuda") == ("sync", "flush")   # no graph capture
    assert modes.modes_for("fakegpu", "cuda", ("sync", "graph")) == ("sync", "graph")


def test_device_cells_sweep_device_dtypes_and_modes_at_one_thread(fake_gpu):
    grid = Grid(lengths=(64,), d_models=(64,), dtypes=("float64",), threads=(1, 2),
                workloads=("table",), device_dtypes=("float32", "float16"))
    cells = [c for c in plan(gpu_registry().all(), grid).cells if not c.is_roof]
    assert {(c.dtype, c.mode, c.threads) for c in cells} == {
        (d, m, 1) for d in ("float32", "float16") for m in ("sync", "flush", "graph")}
    assert len({c.key for c in cells}) == len(cells)          # the mode is part of the key
    assert Cell.from_dict({k: v for k, v in cells[0].as_dict().items() if k != "mode"}).mode == ""


def test_sync_mode_syncs_after_every_call_and_is_calibrated(fake_gpu):
    impl = gpu_registry().get("gpu-table")
    cell = Cell("gpu-table", "fakegpu", "cuda", "table", "paper", 64, 64, "float32", 1, mode="sync")
    bench = FakeBenchmark()
    outcome = measure(impl, cell, bench, "t", Timing(max_time=0.01, min_rounds=3))
    assert outcome.status == "ok" and outcome.peak_method == "fake"
    assert bench.how[0] == "calibrated"
    # first call, peak call, warm call, the timed call: each followed by a device sync; and the
    # cell's (synced) timer read before and after the rounds, for the supervisor's clock check
    assert fake_gpu["syncs"].calls == 6 and fake_gpu["flush"].calls == 0


def test_flush_mode_writes_l2_before_every_round(fake_gpu):
    impl = gpu_registry().get("gpu-table")
    cell = Cell("gpu-table", "fakegpu", "cuda", "table", "paper", 64, 64, "float32", 1, mode="flush")
    bench = FakeBenchmark()
    assert measure(impl, cell, bench, "t", Timing(max_time=0.01, min_rounds=3)).status == "ok"
    kind, rounds, iterations, warmup = bench.how
    assert kind == "pedantic" and iterations == 1 and warmup == 1
    assert modes.MAX_FLUSH_ROUNDS >= rounds >= 3
    assert fake_gpu["flush"].calls == rounds


def test_graph_mode_times_many_calls_per_replay_and_reports_one(fake_gpu, monkeypatch):
    """A replay of one small kernel is timed as the host's graph launch: several calls go into
    one graph, and every time is divided by their count. (The count follows the warm call's
    measured time: a replay target that any call on a busy machine still fits many times.)"""
    monkeypatch.setattr(modes, "GRAPH_ROUND_S", 10.0)
    impl = gpu_registry().get("gpu-table")
    cell = Cell("gpu-table", "fakegpu", "cuda", "table", "paper", 64, 64, "float32", 1, mode="graph")
    bench = FakeBenchmark()
    outcome = measure(impl, cell, bench, "t")
    ((_, calls),) = fake_gpu["captured"]
    assert calls == modes.MAX_GRAPH_CALLS > 1       # a fast call: as many as allowed
    assert bench.extra_info["calls_per_round"] == calls
    assert outcome.median_s == pytest.approx(1e-5 / calls)
    assert outcome.samples_s[0] == pytest.approx(1e-5 / calls)
    monkeypatch.undo()
    assert modes.graph_calls(1e-6) == modes.MAX_GRAPH_CALLS
    assert modes.graph_calls(1e-4) == round(modes.GRAPH_ROUND_S / 1e-4)
    assert modes.graph_calls(1.0) == 1                # a long kernel: one call is plenty


def test_graph_mode_replays_a_capture_and_a_failed_capture_is_a_skip(fake_gpu, monkeypatch):
    impl = gpu_registry().get("gpu-table")
    cell = Cell("gpu-table", "fakegpu", "cuda", "table", "paper", 64, 64, "float32", 1, mode="graph")
    assert measure(impl, cell, FakeBenchmark(), "t").status == "ok"
    assert len(fake_gpu["captured"]) == 1

    def refuse(fn, calls):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setitem(backends.ADAPTERS, "fakegpu",
                        Backend(name="fakegpu", cuda=lambda: None, capture=refuse,
                                peak={"cuda": lambda fn: (0, "fake")}))
    outcome = measure(impl, cell, FakeBenchmark(), "t")
    assert outcome.status == "skip" and "not capturable" in outcome.reason
    assert "stream is capturing" in outcome.reason


def test_an_in_place_kernel_is_reset_once_then_captured(fake_gpu):
    """Graph mode times an in-place kernel too: one reset, then the call captured and replayed
    (each replay rotating the last one's output: the same bytes and work)."""
    events = []
    rounds = modes.rounds_for("graph", lambda: events.append("call"), "fakegpu", "cuda", 1e-3, 0.1,
                              5, fresh=lambda: events.append("reset"))
    assert events[0] == "reset" and events.count("reset") == 1 and events.count("call") >= 1
    rounds.target()
    assert events.count("reset") == 1 and rounds.setup is None


def test_device_timer_syncs_before_reading_the_clock(fake_gpu):
    assert modes.clock("cpu")() > 0 and fake_gpu["syncs"].calls == 0
    modes.clock("cuda")()
    assert fake_gpu["syncs"].calls == 1


def test_roof_ratio_divides_by_the_roof_of_the_same_mode():
    def gpu(impl, mode, median, roof=False):
        c = Cell(impl, "torch", "cuda", "table", "paper", 64, 64, "float32", 1, is_roof=roof,
                 mode=mode)
        return row(c, Outcome("ok", median_s=median, iqr_s=0.0))

    rows = [gpu("k", "sync", 30e-6), gpu("k", "graph", 12e-6),
            gpu("roof-torch-cuda-fill", "sync", 20e-6, True),
            gpu("roof-torch-cuda-fill", "graph", 10e-6, True)]
    df = tidy(rows, "r", "m").set_index(["impl", "mode"])
    assert df.loc[("k", "sync"), "roof_ratio"] == pytest.approx(1.5)
    assert df.loc[("k", "graph"), "roof_ratio"] == pytest.approx(1.2)


def test_gpu_section_sets_each_mode_against_the_fill_of_the_same_mode():
    rows = pd.DataFrame([
        dict(impl=i, mode=m, median_s=t, length=8192, d_model=1024, dtype="float32", ok=True,
             workload="table", bytes_out=8192 * 1024 * 4)
        for i, m, t in (("k", "sync", 40e-6), ("k", "flush", 44e-6), ("k", "graph", 15e-6),
                        (device.FILL, "sync", 20e-6), (device.FILL, "flush", 22e-6),
                        (device.FILL, "graph", 12e-6))])
    table = device.headline_table(rows, 8192, 1024, "float32").set_index("impl")
    assert table.loc["k", "x fill (sync)"] == "2x"
    assert table.loc["k", "x fill (graph)"] == "1.25x"
    assert table.loc["k", "% of fill BW"] == "80%"
    assert table.loc["k", "launch"] == "25 µs"
    text = device.section(rows, {"gpus": [{"name": "Fake GPU", "l2_bytes": 50 * 2**20}]})
    assert "Fake GPU, L2 50 MiB" in text and "8192 x 1024 float32" in text
    assert device.section(None, {}) == ""


def test_gpu_section_sets_other_workloads_against_their_roof_with_the_grade():
    def cell(impl, mode, median, ratio, length=1024, dtype="bfloat16", roof=False):
        return dict(impl=impl, mode=mode, median_s=median, roof_ratio=ratio, length=length,
                    d_model=128, dtype=dtype, ok=True, workload="apply", is_roof=roof)

    rows = pd.DataFrame([
        cell("liger", "sync", 30e-6, 3.0), cell("liger", "graph", 10e-6, 1.25),
        cell("mine", "sync", 12e-6, 1.2), cell("mine", "graph", 9e-6, 1.125),
        cell("mine", "graph", 90e-6, 1.6, length=16384),
        cell("roof-torch-cuda-copy-apply", "graph", 8e-6, 1.0, roof=True)])
    verify = pd.DataFrame([dict(impl="liger", dtype="bfloat16", grade="exact"),
                           dict(impl="liger", dtype="bfloat16", grade="float32"),
                           dict(impl="mine", dtype="float32", grade="fail")])
    table = device.roof_table(rows, 1024, 128, "bfloat16", verify).set_index("impl")
    assert list(table.index) == ["mine", "liger"]     # fastest kernel time first, no roof
    assert table.loc["liger", "x roof (sync)"] == "3x" and table.loc["liger", "% of roof BW"] == "80%"
    assert table.loc["liger", "launch"] == "20 µs"
    assert table.loc["liger", "grade"] == "float32"   # its worst grade in that dtype
    assert table.loc["mine", "grade"] == "-"          # not verified in bfloat16
    sweep = device.share_table(rows).set_index("impl")
    assert list(sweep.columns) == ["1024x128 bfloat16", "16384x128 bfloat16"]
    assert sweep.loc["mine", "16384x128 bfloat16"] == "62%"
    text = device.section(rows, {"gpus": [{"name": "Fake GPU"}]}, verify)
    assert "apply 16384 x 128 bfloat16" in text and "Fake GPU" in text


def test_without_a_gpu_cuda_implementations_are_unavailable_with_the_reason():
    if cuda_driver.problem() is None:
        pytest.skip("a CUDA driver is present here")
    from harness import implementations

    cuda = [i for i in implementations() if i.device == "cuda"]
    assert cuda, "CUDA implementations are registered"
    for impl in cuda:
        assert not impl.available and impl.unavailable_reason()


def test_report_titles_name_the_gpu_of_a_run_recorded_before_the_label_did(tmp_path):
    from harness.report.load import Run

    old = Run(tmp_path, {"machine": "Xeon x16", "gpu": "NVIDIA H100"}, pd.DataFrame(), None)
    assert old.machine == "NVIDIA H100 (Xeon x16)"
    new = Run(tmp_path, {"machine": "NVIDIA H100 (Xeon x16)", "gpu": "NVIDIA H100"},
              pd.DataFrame(), None)
    assert new.machine == "NVIDIA H100 (Xeon x16)"
    assert Run(tmp_path, {"machine": "EPYC x2", "gpu": None}, pd.DataFrame(), None).machine == "EPYC x2"


def test_reading_device_attributes_retains_no_context(monkeypatch):
    """env.json reads L2 size and clocks in the bench parent: that must not create a CUDA
    context there (only a sync or a flush retains the primary context)."""
    calls = []

    class FakeLib:
        def __getattr__(self, name):
            def call(*args):
                calls.append(name)
                return 0
            return call

    monkeypatch.setattr(cuda_driver, "driver", lambda: cuda_driver.Driver(FakeLib(), 0))
    cuda_driver._primary_context.cache_clear()
    cuda_driver.device_facts()
    assert "cuDeviceGetAttribute" in calls and "cuDevicePrimaryCtxRetain" not in calls
    cuda_driver.synchronize()
    assert "cuDevicePrimaryCtxRetain" in calls and calls[-1] == "cuCtxSynchronize"
    cuda_driver._primary_context.cache_clear()
