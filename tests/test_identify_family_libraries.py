"""`identify` on tables the libraries themselves build: transformers' LlamaRotaryEmbedding
(llama3, yarn, linear; its cos/sin and its inv_freq in a torch state dict and safetensors),
diffusers' get_2d_sincos_pos_embed with a cls token and get_timestep_embedding in its
conventions. Each answer is rebuilt with spec_from_dict and its reference matches the file."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.kinds.rotary import RotarySpec
from tests.test_identify_checkpoints import write_safetensors
from tests.test_identify_family import rebuilt, run, within

ROPE = {
    "llama3": ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
               {"rope_type": "llama3", "factor": 8.0, "base": 500000.0,
                "original_max_position_embeddings": 1024}),
    "yarn": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
              "original_max_position_embeddings": 512}, {"rope_type": "yarn", "factor": 4.0}),
    "linear": ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0},
               {"rope_type": "linear", "factor": 2.0, "base": 10000.0}),
}


@pytest.mark.parametrize("params,expect", ROPE.values(), ids=list(ROPE))
def test_transformers_llama_rotary_cache_and_inv_freq(tmp_path, capsys, params, expect):
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig

    config = LlamaConfig(hidden_size=256, num_attention_heads=4, max_position_embeddings=2048,
                         rope_parameters=params)
    rope = llama.LlamaRotaryEmbedding(config)
    cos, sin = rope(torch.zeros(1, 4, 16), torch.arange(300)[None])
    np.savez(tmp_path / "cache.npz", cos=cos.numpy(), sin=sin.numpy())
    rc, found = run(capsys, tmp_path / "cache.npz")
    assert rc == 0 and found["kind"] == "rotary", found
    assert {k: found[k] for k in expect} == expect
    spec = rebuilt(found)
    assert within(spec, np.stack([cos[0].numpy(), sin[0].numpy()]).astype(np.float64)) <= 1.0
    assert spec.attention_scaling == pytest.approx(rope.attention_scaling, rel=1e-6)
    truth = RotarySpec.from_hf_config(config, length=300)
    np.testing.assert_allclose(spec.inv_freq(), truth.inv_freq(), rtol=1e-6)

    torch.save({"model.rotary_emb.inv_freq": rope.inv_freq}, tmp_path / "sd.pt")
    rc, found = run(capsys, tmp_path / "sd.pt")
    assert rc == 0 and found["compared"] == "inv_freq" and found["rope_type"] == expect["rope_type"]
    np.testing.assert_allclose(rebuilt(found).inv_freq(), rope.inv_freq.numpy(), rtol=1e-6)
    write_safetensors(tmp_path / "m.safetensors", {"model.rotary_emb.inv_freq": rope.inv_freq.numpy()})
    rc, again = run(capsys, tmp_path / "m.safetensors")
    assert rc == 0 and again["spec"] == found["spec"]


def test_diffusers_2d_pos_embed_with_a_cls_token(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    table = embeddings.get_2d_sincos_pos_embed(64, 16, cls_token=True, extra_tokens=1,
                                               output_type="pt").float()
    torch.save({"pos_embed": table[None]}, tmp_path / "vit.pt")
    rc, found = run(capsys, tmp_path / "vit.pt")
    assert rc == 0 and found["kind"] == "grid", found
    spec = rebuilt(found)
    assert (spec.grid, spec.extra, spec.axis_order) == ((16, 16), 1, (1, 0))
    assert within(spec, table.double().numpy()) <= 1.0


@pytest.mark.parametrize("flip,shift,scale", [(False, 1.0, 1.0), (True, 0.0, 1.0), (True, 1.0, 1.0),
                                              (True, 0.0, 1000.0)])
def test_diffusers_timestep_embedding(tmp_path, capsys, flip, shift, scale):
    torch = pytest.importorskip("torch")
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    seeded = torch.Generator().manual_seed(0)
    t = torch.linspace(0, 999, 24) if scale == 1.0 else torch.rand(24, generator=seeded)
    emb = embeddings.get_timestep_embedding(t, 320, flip_sin_to_cos=flip, downscale_freq_shift=shift,
                                            scale=scale)
    np.savez(tmp_path / "t.npz", emb=emb.numpy(), timesteps=t.numpy())
    rc, found = run(capsys, tmp_path / "t.npz")
    assert rc == 0 and found["kind"] == "timestep", found
    assert (found["cos_first"], found["freq_shift"], found["scale"]) == (flip, shift, scale)
    spec = rebuilt(found)
    assert within(spec, emb.double().numpy()) <= 1.0
