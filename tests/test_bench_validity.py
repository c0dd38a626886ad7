"""bench's checks of a cell's result and callable (issue 10, item 4): invalid output is `invalid`.

Most tests call `measure` in this process with a fake pytest-benchmark fixture
(it runs the target a few times and reports fixed statistics), so they take
milliseconds; one sweep runs real worker processes end to end.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from harness import Spec
from harness.bench import contention, validity
from harness.bench.cells import STATUSES, Cell, Outcome, row
from harness.bench.measure import measure
from harness.core.registry import Implementation
from harness.report import recommend
from harness.runs import journal, results
from harness.util.recycle import RecycledBuffers
from tests.adversaries import table as correct_table

ROOT = Path(__file__).resolve().parent.parent


class FakeBenchmark:
    """What `measure` uses of pytest-benchmark's fixture: extra_info, a call, its stats."""

    def __init__(self, median_s: float = 1e-3) -> None:
        self.extra_info: dict = {}
        self.calls = 0
        self.stats = SimpleNamespace(stats=SimpleNamespace(
            median=median_s, iqr=median_s / 100, min=median_s, mean=median_s, stddev=0.0,
            rounds=5, data=[median_s] * 5))

    def __call__(self, target):
        for _ in range(3):
            result = target()
            self.calls += 1
        return result                 # as pytest-benchmark returns a timed call's result


def fixed_meter(*samples: contention.Sample):
    """A load meter returning `samples` in turn (the last one again when they run out)."""
    queue = list(samples)
    return lambda: queue.pop(0) if len(queue) > 1 else queue[0]


QUIET = fixed_meter(contention.Sample(0.0, 0.0, 0.0, 0.1, 2))


def cell(length: int = 64, d_model: int = 64, workload: str = "table", impl: str = "x",
         is_roof: bool = False, dtype: str = "float32") -> Cell:
    return Cell(impl, "numpy", "cpu", workload, "paper", length, d_model, dtype, 1,
                batch=2 if workload == "forward" else 1, is_roof=is_roof)


def impl_of(build, workload: str = "table") -> Implementation:
    return Implementation(name="x", backend="numpy", device="cpu", build=build,
                          supports_fn=lambda spec: None, workload=workload)


def run(build, c: Cell | None = None, workload: str = "table") -> tuple[Outcome, FakeBenchmark]:
    bench = FakeBenchmark()
    c = c or cell(workload=workload)
    return measure(impl_of(build, workload), c, bench, "numpy=1", meter=QUIET), bench


# -- builders: one correct, and each wrong in one way ------------------------------------

def builds_fresh(spec: Spec):
    return lambda: correct_table(spec)


def returns_none(spec: Spec):
    return lambda: None


def wrong_shape(spec: Spec):
    return lambda: correct_table(spec)[:-1]


def returns_list(spec: Spec):
    return lambda: correct_table(spec).tolist()


def wrong_dtype(spec: Spec):
    return lambda: correct_table(spec).astype(np.float64)


def has_nan(spec: Spec):
    def call():
        out = correct_table(spec)
        out[3, 5] = np.nan
        return out
    return call


def cached_buffer(spec: Spec):
    cached = correct_table(spec)
    return lambda: cached


def cached_read_only(spec: Spec):
    """The same buffer every time, read-only: it cannot be poisoned, so it must not come back."""
    cached = correct_table(spec)
    cached.flags.writeable = False
    return lambda: cached


def lookup_copy(spec: Spec):
    """The issue's case: the table computed at setup, a copy returned (memcpy speed)."""
    kept = correct_table(spec)
    return lambda: kept.copy()


_CACHE: dict = {}


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty module-level cache: tables left by an earlier run in the
    same process (a mutation tester's) would not grow with the table and hide the lookup."""
    _CACHE.clear()


def lookup_global(spec: Spec):
    """A lookup hiding its table in a module-level cache the callable names."""
    _CACHE[spec] = correct_table(spec).astype(np.float64)
    return lambda: _CACHE[spec].astype(spec.dtype)


class _Holder:
    def __init__(self, spec: Spec) -> None:
        self.parts = [correct_table(spec)]

    def call(self):
        return self.parts[0].copy()


def lookup_method(spec: Spec):
    """A bound method of an object that keeps the table in a list attribute."""
    return _Holder(spec).call


def lookup_partial(spec: Spec):
    return functools.partial(np.array, correct_table(spec), copy=True)


def recycled(spec: Spec):
    """Like the harness's -recycled builders: memory kept, but allocated at call time."""
    buffers = RecycledBuffers((spec.length, spec.d_model), spec.dtype)

    def call():
        out = buffers.take()
        out[...] = correct_table(spec)
        return out
    return call


def block_tables(spec: Spec):
    """Working tables of one block of rows (at most 64), as the angle-addition builders keep:
    table-sized for a short table, but they do not grow with it."""
    block = correct_table(spec.replace(length=min(64, spec.length))).astype(np.float64)

    def call():
        out = correct_table(spec)
        out[: block.shape[0]] = block
        return out
    return call


def forward_keeps_table(spec: Spec, x: np.ndarray):
    table = correct_table(spec)
    return lambda: x + table


# -- item 4: the result of the first call, and a second call ------------------------------

@pytest.mark.parametrize("build, words", [
    (returns_none, "returned None"),
    (wrong_shape, "shape (63, 64), expected (64, 64)"),
    (returns_list, "dtype list, expected float32"),
    (wrong_dtype, "dtype float64, expected float32"),
    (has_nan, "1 NaN/Inf values (first at position 3, column 5)"),
    (cached_buffer, "after poisoning the first result"),
    (cached_read_only, "returned the same buffer twice"),
])
def test_invalid_results_are_invalid_and_not_timed(build, words):
    outcome, bench = run(build)
    assert outcome.status == "invalid", outcome
    assert words in outcome.reason
    assert bench.calls == 0 and math.isnan(outcome.median_s)   # never timed
    assert outcome.first_call_s > 0 and outcome.build_s >= 0


@pytest.mark.parametrize("build, words", [
    (returns_none, "returned None"),
    (wrong_shape, "shape (63, 64), expected (64, 64)"),
    (wrong_dtype, "dtype float64, expected float32"),
    (has_nan, "1 NaN/Inf values (first at position 3, column 5)"),
    (cached_buffer, "after poisoning the first result"),
    (cached_read_only, "returned the same buffer twice"),
])
def test_a_roof_gets_the_same_checks_of_its_first_and_warm_results(build, words, monkeypatch):
    """A roof keeps no copy of its values (nothing judges them, and its timed result is not
    compared), but a broken first or warm result is caught as an implementation's is."""
    monkeypatch.setenv("PE_HARNESS_BENCH_SAMPLE_SEED", "5")
    outcome, bench = run(build, cell(is_roof=True))
    assert outcome.status == "invalid" and words in outcome.reason, outcome
    assert bench.calls == 0
    fine, _ = run(builds_fresh, cell(is_roof=True))
    timed, _ = run(builds_fresh, cell())
    assert fine.status == "ok" and fine.sampled == () and len(timed.sampled) == 2


@pytest.mark.parametrize("build", [builds_fresh, recycled, block_tables])
def test_a_fresh_finite_table_each_call_is_timed_ok(build):
    outcome, bench = run(build)
    assert outcome.status == "ok", outcome.reason
    assert bench.calls == 3 and outcome.median_s == 1e-3


@pytest.mark.parametrize("build", [lookup_copy, lookup_global, lookup_method, lookup_partial])
def test_a_table_kept_after_setup_is_a_lookup(build):
    c = cell(512, 64)
    outcome, _ = run(build, c)
    assert outcome.status == "invalid" and validity.LOOKUP in outcome.reason, outcome.reason
    assert outcome.retains_bytes >= c.bytes_out


def test_a_forward_may_keep_its_table_and_a_roof_is_never_a_lookup():
    forward, _ = run(forward_keeps_table, cell(512, 64, workload="forward"), workload="forward")
    assert forward.status == "ok", forward.reason
    assert forward.retains_bytes >= 512 * 64 * 4          # recorded all the same
    roof, _ = run(lookup_copy, cell(512, 64, is_roof=True))
    assert roof.status == "ok"


def test_block_sized_working_tables_are_spared_by_the_longer_build():
    """At 64 rows the block tables are twice the table's bytes; at 1024 they are the same."""
    c = cell(64, 64)
    retained, why = validity.setup_retention(impl_of(block_tables), c, block_tables(c.spec()))
    assert retained >= 2 * c.bytes_out and why is None


def test_reachable_arrays_count_shared_memory_once():
    base = np.zeros((100, 10))
    fn = functools.partial(print, base, base.T, base[:10])
    assert validity.retained_bytes(fn) == base.nbytes


def test_a_module_built_on_the_meta_device_keeps_no_bytes():
    """transformers builds some modules on torch's meta device: a shape without memory."""
    torch = pytest.importorskip("torch")
    weight = torch.empty((4096, 1024), device="meta")
    real = torch.ones(16)
    assert validity.retained_bytes(lambda: (weight, real)) == real.nbytes


def test_invalid_is_a_status_and_not_ok_in_the_table_and_the_recommendation():
    assert "invalid" in STATUSES
    good = Cell("good", "numpy", "cpu", "table", "paper", 64, 64, "float32", 1)
    bad = Cell("cheat", "numpy", "cpu", "table", "paper", 64, 64, "float32", 1)
    bad_big = Cell("cheat", "numpy", "cpu", "table", "paper", 4096, 64, "float32", 1)
    rows = [row(good, Outcome("ok", median_s=2e-6, iqr_s=1e-8)),
            row(bad, Outcome("ok", median_s=1e-6, iqr_s=1e-8)),
            row(bad_big, Outcome("invalid", "setup retains 1 MiB ...: " + validity.LOOKUP))]
    frame = results.tidy(rows, "run", "machine")
    frame["ok"] = (frame["status"] == "ok") & (frame["median_s"] > 0)
    frame["elements"] = frame["length"] * frame["d_model"]
    frame["batch"] = frame["batch"].astype(int)
    verify = pd.DataFrame({"impl": ["good", "cheat"], "dtype": "float32", "status": "pass",
                           "max_abs_err": 1e-7, "max_position": 100_000})
    (pick,) = recommend(frame, verify)
    assert pick.impl == "good"      # the cheat is faster where it ran ok, but invalid elsewhere
    assert any(e.startswith("cheat: invalid in bench") for e in pick.excluded)


# -- the real registry: the harness's own builders are not lookups --------------------------

def test_recycled_and_angle_addition_builders_are_not_lookups():
    pytest.importorskip("numba")
    from harness import implementations
    from harness.core.registry import REGISTRY

    implementations()
    for name in ("numba-angleadd", "numba-angleadd-f64", "numba-angleadd-recycled"):
        impl = REGISTRY.get(name)
        for length in (8, 64, 4096):
            c = Cell(name, "numba", "cpu", "table", "paper", length, 64, "float32", 1)
            retained, why = validity.setup_retention(impl, c, impl.build(c.spec()))
            assert why is None, (name, length, retained)


# -- end to end: a sweep over real worker processes ----------------------------------------

PLUGIN = textwrap.dedent('''
    import numpy as np
    from harness import Spec, reference, register

    @register(name="bv-none", backend="numpy")
    def none(spec: Spec):
        return lambda: None

    @register(name="bv-nan", backend="numpy")
    def nan(spec: Spec):
        return lambda: np.full((spec.length, spec.d_model), np.nan, spec.dtype)

    @register(name="bv-lookup", backend="numpy")
    def lookup(spec: Spec):
        kept = np.ones((spec.length, spec.d_model), spec.dtype)
        return lambda: kept.copy()

    @register(name="bv-ok", backend="numpy")
    def ok(spec: Spec):
        return lambda: reference(spec).astype(spec.dtype)
''')


@pytest.mark.e2e
def test_a_sweep_records_invalid_cells_and_says_so(tmp_path):
    plugin = tmp_path / "bv_plugin.py"
    plugin.write_text(PLUGIN)
    cmd = [sys.executable, "-m", "harness", "bench", "--out", str(tmp_path / "runs"), "--no-post",
           "--threads", "1", "--dtypes", "float32", "--workloads", "table", "--lengths", "16",
           "--d-models", "8", "--max-time", "0.01", "--plugin", str(plugin), "--only", "bv-*"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env={**os.environ})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p.parent for p in (tmp_path / "runs").glob(f"*/{journal.FILENAME}")]
    df = pd.read_csv(run_dir / "bench.csv", keep_default_na=False, na_values=[""])
    status = df[~df["is_roof"]].set_index("impl")["status"].to_dict()
    assert status == {"bv-none": "invalid", "bv-nan": "invalid", "bv-lookup": "invalid",
                      "bv-ok": "ok"}
    reasons = df.set_index("impl")["reason"]
    assert "None" in reasons["bv-none"] and "NaN" in reasons["bv-nan"]
    assert validity.LOOKUP in reasons["bv-lookup"]
    assert "bench: 3 cell(s) invalid" in proc.stdout and "(1 lookup(s)" in proc.stdout
    assert {"retains_bytes", "flags", "others_busy", "load_before"} <= set(df.columns)
