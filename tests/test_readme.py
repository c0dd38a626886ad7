"""The README's Python examples run as written (with the user's own code they import stood in
for by honest implementations), so none of them can fail as printed again."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import numpy as np

from harness import REGISTRY

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def sinusoidal_table(length: int, d_model: int, dtype: str = "float32") -> np.ndarray:
    """The user's code: the paper's table, angles in float64, rounded once."""
    theta = np.arange(length)[:, None] * 10000.0 ** (-np.arange(d_model // 2) / (d_model / 2))
    return np.stack([np.sin(theta), np.cos(theta)], 2).reshape(length, -1).astype(dtype)


def rope_user_code(spec):
    """The user's rotary cache and apply (Llama's rotate_half), angles in float64."""
    inv = spec.inv_freq()

    def cache(length):
        theta = np.arange(length)[:, None] * inv
        emb = np.concatenate([theta, theta], -1)
        return np.cos(emb).astype(spec.dtype), np.sin(emb).astype(spec.dtype)

    def apply(q, k, positions):
        emb = np.concatenate([positions[:, None] * inv] * 2, -1)
        cos, sin = np.cos(emb), np.sin(emb)
        half = spec.rot // 2

        def rotate(x):
            turned = np.concatenate([-x[..., half:], x[..., :half]], -1)
            return (x * cos + turned * sin).astype(spec.dtype)
        return rotate(q.astype(np.float64)), rotate(k.astype(np.float64))
    return cache, apply


def test_the_readme_has_the_examples_this_test_runs():
    found = blocks()
    assert len(found) == 3
    assert "register(" in found[0] and "assert_callable" in found[1] and "RotarySpec" in found[2]


def test_the_plugin_example_registers_and_passes_verify():
    from harness.core.checks import check

    namespace: dict = {}
    exec(compile(blocks()[0], "README-plugin", "exec"), namespace)
    try:
        impl = REGISTRY.get("my-numpy")
        from harness import Spec
        for spec in (Spec(300, 64), Spec(300, 64, dtype="float64", offset=7)):
            assert check(impl, spec).status == "pass"
    finally:
        REGISTRY.remove("my-numpy")


def test_the_check_callable_example_passes_every_spec_it_names(monkeypatch):
    monkeypatch.setitem(sys.modules, "my_model", types.SimpleNamespace(sinusoidal_table=sinusoidal_table))
    namespace: dict = {}
    exec(compile(blocks()[1], "README-check", "exec"), namespace)
    test = namespace["test_positional_encoding_matches_the_paper"]
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    for spec in mark.args[1]:
        test(spec)
    assert namespace["result"].status == "pass" and namespace["result"].grade == "exact"


def test_the_rotary_example_runs_on_a_llama_config(tmp_path, monkeypatch):
    from harness import RotarySpec

    config = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4,
              "max_position_embeddings": 8192, "rope_theta": 500000.0}
    (tmp_path / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)
    cache, apply = rope_user_code(RotarySpec.from_hf_config(config, length=8192))
    namespace: dict = {"my_rope_cache": cache, "my_apply": apply}
    exec(compile(blocks()[2], "README-rotary", "exec"), namespace)
    assert namespace["cos"].shape == (8192, 128)
