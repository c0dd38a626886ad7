"""Every backend's threads pinned (or declared unpinnable) and its asynchronous results waited on
inside the timed call: JAX, whose CPU calls return before they compute, through a fake and for real."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import backends
from harness.backends.base import Backend
from harness.bench.cells import Cell
from harness.bench.measure import measure
from harness.bench.settings import Timing
from harness.core.registry import Registry
from tests.test_device_timing import FakeBenchmark

ROOT = Path(__file__).resolve().parent.parent


def test_an_asynchronous_backend_is_waited_on_in_every_timed_call(monkeypatch):
    """A backend with a `wait` (JAX: block_until_ready) has each call's result waited on inside
    the call bench times; a result that no call waited on was timed as its dispatch."""
    waited: list[int] = []
    monkeypatch.setitem(backends.ADAPTERS, "lazy",
                        Backend(name="lazy", wait=lambda out: waited.append(id(out))))
    calls: list[np.ndarray] = []

    def build(spec):
        def call():
            calls.append(np.zeros((spec.length, spec.d_model), np.float32))
            return calls[-1]
        return call

    reg = Registry()
    reg.register(name="lazy-table", backend="lazy")(build)
    cell = Cell("lazy-table", "lazy", "cpu", "table", "paper", 8, 8, "float32", 1)
    outcome = measure(reg.get("lazy-table"), cell, FakeBenchmark(), "t",
                      Timing(max_time=0.01, min_rounds=3))
    assert outcome.status == "ok", outcome.reason
    # the first call, the warm call, the peak call, one settling call (harness.bench.settle: it
    # faults in no page) and the timed call: each waited on
    assert len(calls) == 5 and waited == [id(c) for c in calls]


ONE_THREAD = """
import json, os
os.environ.pop("XLA_FLAGS", None)
from harness.bench import threads
said = threads.pin("jax", 1)
import jax, jax.numpy as jnp            # an unknown XLA flag would abort here
value = float(jax.jit(lambda x: jnp.sin(x).sum())(jnp.ones(8)))
print(json.dumps({"said": said, "flags": os.environ["XLA_FLAGS"], "value": value}))
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_jax_at_one_thread_is_pinned_before_it_is_imported():
    out = subprocess.run([sys.executable, "-c", ONE_THREAD], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.splitlines()[-1])
    assert "--xla_cpu_multi_thread_eigen=false" in found["flags"]
    assert "xla cpu kernels single-threaded" in found["said"]
    assert found["value"] == pytest.approx(8 * np.sin(1.0), rel=1e-6)


def test_jax_says_when_it_cannot_be_pinned(monkeypatch):
    jax_backend = backends.get("jax")
    assert jax_backend.wait is not None and jax_backend.pin_threads is not None
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert "unpinnable at 2 threads" in jax_backend.pin_threads(2)
    assert "sized by affinity=4" in jax_backend.pin_threads(4)
    monkeypatch.setitem(sys.modules, "jax", object())
    assert "unpinned" in jax_backend.pin_threads(1)
