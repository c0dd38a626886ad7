"""`identify` on the other kinds, from files built by the kinds' own references: rotary caches
(every rope_type, both layouts, offsets, attention scaling) and inv_freq vectors, grids with
extra rows, timestep embeddings; the printed JSON rebuilds (spec_from_dict) a spec whose
reference is the file; bad input is exit 2 naming the key."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli import main as cli
from harness.core import kinds
from harness.core.kinds.grid import GridSpec
from harness.core.kinds.rotary import RotarySpec
from harness.core.kinds.timestep import TimestepSpec
from tests.test_identify_checkpoints import write_safetensors


def run(capsys, path, *extra) -> tuple[int, dict]:
    rc = cli(["identify", str(path), "--json", *extra])
    out = capsys.readouterr().out
    return rc, (json.loads(out) if out.strip() else {})


def rebuilt(found: dict):
    """The spec the JSON names, read back both ways: `spec` alone, and the top-level fields."""
    spec = kinds.spec_from_dict(found["spec"])
    assert kinds.spec_from_dict({k: found[k] for k in found["spec"]}) == spec
    return spec


def within(spec, actual) -> float:
    """error / tolerance of the spec's reference against the file's values."""
    return float(np.max(np.abs(kinds.reference(spec) - actual) / kinds.tolerance(spec)))


_LONG = dict(rope_type="longrope", head_dim=16, factor=4.0, original_max_position_embeddings=256,
             short_factor=(1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.1, 4.0),
             long_factor=(1.0, 1.5, 2.2, 3.0, 4.5, 6.0, 8.0, 12.0), length=512)
ROTARY = {
    "neox": ({}, {"layout": "half", "rope_type": "default", "base": 10000.0}),
    "gptj-offset": (dict(layout="interleaved", offset=7, base=500000.0),
                    {"layout": "interleaved", "offset": 7, "base": 500000.0}),
    "huge-offset": (dict(length=64, offset=1_000_000), {"offset": 1_000_000}),
    "linear": (dict(rope_type="linear", factor=4.0), {"rope_type": "linear", "factor": 4.0}),
    "llama3": (dict(rope_type="llama3", factor=8.0, original_max_position_embeddings=8192,
                    base=500000.0, head_dim=128, length=512),
               {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "yarn": (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64),
             {"rope_type": "yarn", "factor": 4.0, "attention_factor": None}),
    "yarn-attention": (dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=128,
                            attention_factor=1.25, layout="interleaved"),
                       {"rope_type": "yarn", "attention_factor": 1.25, "layout": "interleaved"}),
    "longrope": (_LONG, {"rope_type": "longrope"}),
    "float16": (dict(dtype="float16", length=64), {"dtype": "float16", "rope_type": "default"}),
}


@pytest.mark.parametrize("fields,expect", ROTARY.values(), ids=list(ROTARY))
def test_rotary_caches_are_identified_and_rebuilt(tmp_path, capsys, fields, expect):
    spec = RotarySpec(**{"length": 300, "head_dim": 64, **fields})
    cos, sin = kinds.reference(spec).astype(spec.dtype)
    path = tmp_path / "rope.npz"
    np.savez(path, cos=cos[None, None], sin=sin[None, None])     # [1, 1, L, D], like HF buffers
    rc, found = run(capsys, path)
    assert rc == 0 and found["kind"] == "rotary" and found["match"], found
    assert {k: found[k] for k in expect} == expect
    again = rebuilt(found)
    assert within(again, np.stack([cos, sin]).astype(np.float64)) <= 1.0
    np.testing.assert_allclose(again.inv_freq(), spec.inv_freq(), rtol=1e-5)
    assert again.attention_scaling == pytest.approx(spec.attention_scaling, rel=1e-6)


def test_the_dynamic_rescaled_base_reads_as_default_and_says_so(tmp_path, capsys):
    spec = RotarySpec(300, 64, rope_type="dynamic", factor=2.0, max_position_embeddings=256)
    cos, sin = kinds.reference(spec).astype(np.float32)
    np.savez(tmp_path / "dyn.npz", cos_cached=cos, sin_cached=sin)
    rc, found = run(capsys, tmp_path / "dyn.npz")
    assert rc == 0 and found["rope_type"] == "default"
    assert any("dynamic" in n for n in found["notes"])
    np.testing.assert_allclose(rebuilt(found).inv_freq(), spec.inv_freq(), rtol=1e-5)


def test_inv_freq_vectors_in_a_state_dict_and_safetensors(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    spec = RotarySpec(64, 128, rope_type="llama3", factor=8.0, base=500000.0,
                      original_max_position_embeddings=8192)
    inv = spec.inv_freq().astype(np.float32)
    torch.save({"model.layers.0.self_attn.rotary_emb.inv_freq": torch.from_numpy(inv),
                "model.norm.weight": torch.ones(8)}, tmp_path / "sd.pt")
    rc, found = run(capsys, tmp_path / "sd.pt")
    assert rc == 0 and found["compared"] == "inv_freq"
    assert found["key"] == "model.layers.0.self_attn.rotary_emb.inv_freq"
    assert (found["rope_type"], found["factor"], found["base"]) == ("llama3", 8.0, 500000.0)
    np.testing.assert_allclose(rebuilt(found).inv_freq(), inv, rtol=1e-6)
    write_safetensors(tmp_path / "m.safetensors", {"rotary_emb.inv_freq": inv})
    rc, again = run(capsys, tmp_path / "m.safetensors")
    assert rc == 0 and again["spec"] == found["spec"]


def test_a_stacked_cache_is_read_when_the_kind_is_forced(tmp_path, capsys):
    spec = RotarySpec(100, 32, layout="interleaved", offset=3)
    np.save(tmp_path / "cache.npy", kinds.reference(spec).astype(np.float32))
    rc, found = run(capsys, tmp_path / "cache.npy", "--kind", "rotary")
    assert rc == 0 and rebuilt(found) == spec


def test_no_rotary_cache_lists_why_and_exits_1(tmp_path, capsys):
    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 6, (50, 16))
    np.savez(tmp_path / "x.npz", cos=np.cos(theta), sin=np.sin(theta))
    rc, found = run(capsys, tmp_path / "x.npz")
    assert rc == 1 and not found["match"] and "not a rotary cache" in found["notes"][-1]


BAD = {
    "cos alone": (dict(cos=np.ones((4, 8))), "'cos' but no 'sin'"),
    "sin alone": (dict(sin_cached=np.ones((4, 8))), "'sin_cached' but no 'cos_cached'"),
    "shapes": (dict(cos=np.ones((4, 8)), sin=np.ones((4, 6))), "'cos' has shape .* 'sin' has"),
    "rising": (dict(inv_freq=np.arange(1.0, 5.0) / 10), "inv_freq must not increase"),
    "negative": (dict(inv_freq=-np.ones(4)), r"inv_freq must hold finite frequencies in \(0, pi\]"),
}


@pytest.mark.parametrize("arrays,message", BAD.values(), ids=list(BAD))
def test_bad_rotary_input_is_exit_2_naming_the_key(tmp_path, capsys, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    assert cli(["identify", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert pytest.importorskip("re").search(message, err), err


GRIDS = {
    "mae-cls": dict(grid=(8, 8), d_model=64, axis_order=(1, 0), extra=1),
    "detr": dict(grid=(6, 6), d_model=32, layout="interleaved", coords="normalized", start=1.0,
                 norm_eps=1e-6),
    "timm-2x3": dict(grid=(4, 6), d_model=48, layout="function_major"),
    "video": dict(grid=(3, 4, 4), d_model=64, split=(2, 3, 3), axis_order=(0, 2, 1)),
}


@pytest.mark.parametrize("fields", GRIDS.values(), ids=list(GRIDS))
def test_grids_are_identified_with_their_extra_rows(tmp_path, capsys, fields):
    spec = GridSpec(**fields)
    table = kinds.reference(spec).astype(np.float32)
    np.savez(tmp_path / "g.npz", pos_embed=table[None])
    rc, found = run(capsys, tmp_path / "g.npz")
    assert rc == 0 and found["kind"] == "grid", found
    again = rebuilt(found)
    assert (again.grid, again.extra) == (spec.grid, spec.extra)
    assert within(again, table.astype(np.float64)) <= 1.0


def test_an_unnamed_square_grid_is_a_grid_and_a_1d_table_stays_one(tmp_path, capsys):
    spec = GridSpec((4, 4), 32, axis_order=(1, 0))
    np.save(tmp_path / "g.npy", kinds.reference(spec)[None].astype(np.float32))
    rc, found = run(capsys, tmp_path / "g.npy")
    assert rc == 0 and found["kind"] == "grid"
    from harness import Spec, reference
    np.save(tmp_path / "t.npy", reference(Spec(16, 32))[None].astype(np.float32))
    rc, found = run(capsys, tmp_path / "t.npy")
    assert rc == 0 and "kind" not in found and found["d_model"] == 32


TIMESTEPS = {
    "ddpm": ("uniform", 64, 320, 1000.0, {}),
    "adm": ("random", 17, 257, 1000.0, dict(freq_shift=0.0, cos_first=True)),
    "scale1000": ("uniform", 32, 256, 1.0, dict(freq_shift=0.0, cos_first=True, scale=1000.0)),
    "period-shift": ("random", 16, 128, 50.0, dict(max_period=1000.0, freq_shift=0.5)),
}


@pytest.mark.parametrize("case", TIMESTEPS.values(), ids=list(TIMESTEPS))
def test_timestep_embeddings_are_identified_with_their_timesteps(tmp_path, capsys, case):
    spread, count, dim, t_max, fields = case
    make = TimestepSpec.uniform if spread == "uniform" else TimestepSpec.random
    spec = make(count, dim, t_max=t_max, **fields)
    emb = kinds.reference(spec).astype(np.float32)
    np.savez(tmp_path / "t.npz", emb=emb, timesteps=np.array(spec.timesteps))
    rc, found = run(capsys, tmp_path / "t.npz")
    assert rc == 0 and found["kind"] == "timestep"
    assert rebuilt(found) == spec


def test_timesteps_given_on_the_command_line(tmp_path, capsys):
    spec = TimestepSpec((0.0, 10.0, 500.0, 999.0), 16, freq_shift=0.0)
    np.save(tmp_path / "emb.npy", kinds.reference(spec).astype(np.float32))
    rc, found = run(capsys, tmp_path / "emb.npy", "--timesteps", "0,10,500,999")
    assert rc == 0 and rebuilt(found) == spec
    assert cli(["identify", str(tmp_path / "emb.npy"), "--kind", "timestep"]) == 2
    assert "--timesteps" in capsys.readouterr().err
    assert cli(["identify", str(tmp_path / "emb.npy"), "--timesteps", "0,1"]) == 2
    assert "2 timesteps for 4 rows" in capsys.readouterr().err
