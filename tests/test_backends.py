"""Backend adapters: every backend the harness uses is described in harness.backends, once."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from harness import backends, implementations
from harness.backends.base import Backend
from harness.bench import env, threads
from harness.bench.roofs import ROOF_REGISTRY
from harness.core.checks import poison
from harness.core.convert import to_numpy


def test_every_builtin_backend_has_an_adapter():
    used = {i.backend for i in implementations()} | {r.backend for r in ROOF_REGISTRY.all()}
    assert used <= set(backends.ADAPTERS), used - set(backends.ADAPTERS)


def test_arrays_are_recognised_converted_and_poisoned_by_their_adapter():
    import jax.numpy as jnp
    import tensorflow as tf
    import torch

    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = {"numpy": ref.copy(), "torch": torch.from_numpy(ref.copy()),
             "tensorflow": tf.constant(ref), "jax": jnp.asarray(ref)}
    for name, value in cases.items():
        assert backends.owner(value).name == name
        np.testing.assert_array_equal(to_numpy(value), ref)
    assert poison(cases["numpy"]) and np.isnan(cases["numpy"]).all()
    assert poison(cases["torch"]) and torch.isnan(cases["torch"]).all()
    assert not poison(cases["tensorflow"]) and not poison(cases["jax"])   # immutable
    read_only = ref.copy()
    read_only.flags.writeable = False
    assert not poison(read_only)
    assert backends.owner([1, 2]) is None and not poison([1.0])


def test_a_missing_module_and_an_unknown_device_are_reasons_not_errors():
    ghost = Backend(name="ghost", modules=("no_such_module_pe",), install="pip install ghost")
    assert ghost.missing() == "no_such_module_pe is not installed (pip install ghost)"
    assert ghost.device_problem("cpu") is None
    assert "no cuda device support" in ghost.device_problem("cuda")
    assert backends.get("numba").device_problem("tpu") == "backend numba has no tpu device support"


def test_unknown_backends_get_a_plain_host_adapter_and_plugins_can_add_their_own(monkeypatch):
    plain = backends.get("my-plugin-backend")
    assert plain.modules == () and plain.pin_threads is None and "cpu" in plain.peak
    monkeypatch.setattr(backends, "ADAPTERS", dict(backends.ADAPTERS))
    mine = backends.add(Backend(name="mine", pin_threads=lambda n: f"mine={n}"))
    assert backends.get("mine") is mine
    assert threads.pin("mine", 3).endswith("mine=3")
    with pytest.raises(ValueError, match="already defined"):
        backends.add(Backend(name="numpy"))


def test_env_records_every_adapters_distributions():
    assert {"torch", "tensorflow", "numba", "jax", "cupy", "triton"} <= set(env.PACKAGES)
    assert env.version("numpy") == np.__version__


@pytest.mark.e2e      # a fresh process importing TensorFlow (8 CPU-s): `nox -s e2e`, which CI runs
def test_tensorflow_is_imported_without_its_startup_banners():
    """TF 2.21 prints a oneDNN notice through absl whatever TF_CPP_MIN_LOG_LEVEL says; the
    adapter's prepare() keeps it out of the verbs' output (a fresh process: TF imports once)."""
    code = ("import sys; from harness.backends import tensorflow as t; t.import_quietly(); "
            "print('imported' if 'tensorflow' in sys.modules else 'missing')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if k != "TF_CPP_MIN_LOG_LEVEL"})
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr
    assert "oneDNN" not in done.stderr and "absl::InitializeLog" not in done.stderr


def test_numba_bfloat16_inputs_hold_the_bits_torch_rounds_to():
    """Handed over in a tensor over a NumPy array (harness.backends.numba.inputs: huge pages),
    the inputs keep the bits torch's own rounding gives: to nearest even, ties included."""
    torch = pytest.importorskip("torch")
    from harness.backends.numba import inputs

    ties = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8), 3.0e38, 1e-40], np.float32)
    values = np.concatenate([ties, np.random.default_rng(0).standard_normal(997).astype(np.float32)])
    got = inputs(values.astype(np.float64), "bfloat16", "cpu")
    want = torch.from_numpy(values).to(torch.bfloat16)
    assert got.dtype == torch.bfloat16 and torch.equal(got.view(torch.int16), want.view(torch.int16))
