"""Truth from transformers itself: every rope_type's frequencies and scale, Llama's and GPT-NeoX's
cos/sin and apply, GPT-J's interleaved sinusoids, and from_hf_config on their configs.

transformers computes in float32, so its values must lie within the float32 tolerance of the
float64 reference: the same test an implementation faces.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from harness.core.kinds.rotary import RotarySpec, apply_reference, cache_reference, cache_tolerance
from harness.core.kinds.rotary.apply import apply_inputs
from harness.core.kinds.rotary.tolerance import apply_tolerance, exact_cache_tolerance
from harness.core.tolerance import C_ANGLE, C_FREQ, eps

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


def _module(name: str):
    """Import a transformers module directly, or skip saying why (a torchvision built for another torch
    breaks transformers' lazy top-level names with a RuntimeError, not an ImportError)."""
    try:
        return importlib.import_module(f"transformers.{name}")
    except Exception as exc:
        pytest.skip(f"transformers.{name} does not import here: {type(exc).__name__}: {exc}")


def _config(model: str, cls: str, **fields):
    return getattr(_module(f"models.{model}.configuration_{model}"), cls)(**fields)


def _modeling(model: str):
    return _module(f"models.{model}.modeling_{model}")


rope_utils = _module("modeling_rope_utils")

HEAD_DIM, MPE = 64, 4096
SCALINGS = {
    "linear": dict(factor=4.0),
    "dynamic": dict(factor=2.0),
    "yarn": dict(factor=4.0, original_max_position_embeddings=1024),
    "yarn-mscale": dict(factor=40.0, original_max_position_embeddings=1024, mscale=0.707,
                        mscale_all_dim=1.0, truncate=False, beta_fast=16, beta_slow=2),
    "yarn-attention": dict(factor=8.0, original_max_position_embeddings=512, attention_factor=1.3),
    "llama3": dict(factor=8.0, original_max_position_embeddings=1024, low_freq_factor=1.0,
                   high_freq_factor=4.0),
    "longrope": dict(factor=4.0, original_max_position_embeddings=1024,
                     short_factor=[1.0 + k / 16 for k in range(HEAD_DIM // 2)],
                     long_factor=[1.0 + k for k in range(HEAD_DIM // 2)]),
}
#: (scaling name, the sequence length the model sees): dynamic and longrope on both sides of their switch
RUNS = [("default", 100), ("linear", 100), ("dynamic", 1000), ("dynamic", 6000), ("yarn", 2000),
        ("yarn-mscale", 300), ("yarn-attention", 300), ("llama3", 2000), ("longrope", 1024),
        ("longrope", 1025)]


def rope_parameters(name: str, theta: float = 10000.0) -> dict:
    return {"rope_type": name.split("-")[0], "rope_theta": theta, **SCALINGS.get(name, {})}


def llama_config(name: str, theta: float = 10000.0):
    return _config("llama", "LlamaConfig", hidden_size=HEAD_DIM * 4, num_attention_heads=4,
                   head_dim=HEAD_DIM, num_hidden_layers=1, max_position_embeddings=MPE,
                   rope_parameters=rope_parameters(name, theta))


def spec_of(name: str, seq_len: int, theta: float = 10000.0, dtype: str = "float32") -> RotarySpec:
    fields = {k: v for k, v in SCALINGS.get(name, {}).items()}
    if name == "dynamic":
        fields["max_position_embeddings"] = MPE
    return RotarySpec(seq_len, HEAD_DIM, base=theta, rope_type=name.split("-")[0], dtype=dtype, **fields)


def allowed_float32_rel(inv: np.ndarray) -> np.ndarray:
    """The relative error of a float32 inv_freq the tolerance allows for: C_ANGLE + C_FREQ |ln inv| eps."""
    return eps("float32") * (C_ANGLE + C_FREQ * np.abs(np.log(inv)))


@pytest.mark.parametrize("name, seq_len", RUNS)
def test_inv_freq_and_scale_match_the_rope_init_functions(name, seq_len):
    spec = spec_of(name, seq_len)
    config = llama_config(name)
    if name == "default":
        hf_inv, hf_scale = _modeling("llama").LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        init = rope_utils.ROPE_INIT_FUNCTIONS[spec.rope_type]
        hf_inv, hf_scale = init(config, "cpu", seq_len=seq_len)
    hf_inv = hf_inv.double().numpy()
    ours = spec.inv_freq()
    assert np.all(np.abs(ours / hf_inv - 1) <= allowed_float32_rel(ours)), np.abs(ours / hf_inv - 1).max()
    assert spec.attention_scaling == pytest.approx(hf_scale, rel=1e-15)
    assert RotarySpec.from_hf_config(config, length=seq_len) == spec


def _hf_cos_sin(rotary, positions: np.ndarray):
    x = torch.zeros(1, dtype=torch.float32)
    cos, sin = rotary(x, torch.from_numpy(positions)[None])
    return cos[0].double().numpy(), sin[0].double().numpy()


@pytest.mark.parametrize("name, seq_len", RUNS)
def test_llama_rotary_embedding_is_within_the_float32_tolerance(name, seq_len):
    spec = spec_of(name, seq_len)
    rotary = _modeling("llama").LlamaRotaryEmbedding(llama_config(name))
    cos, sin = _hf_cos_sin(rotary, np.arange(seq_len))
    want, tol = cache_reference(spec), cache_tolerance(spec)
    ratio = max(np.max(np.abs(cos - want[0]) / tol[0]), np.max(np.abs(sin - want[1]) / tol[1]))
    assert ratio <= 1.0
    # and the reference is no looser than it must be: another rope_type's cache is far outside it
    wrong = cache_reference(spec_of("default", seq_len)) if name != "default" else cache_reference(
        spec.replace(base=20000.0))
    if not np.allclose(wrong, want):
        assert np.max(np.abs(wrong - want) / tol) > 10


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_llama_and_gptj_apply_match_apply_reference(layout):
    spec = RotarySpec(300, HEAD_DIM, offset=17, layout=layout)
    q, k, positions = apply_inputs(spec, 2, 3)
    if layout == "half":
        modeling = _modeling("llama")
        rotary = modeling.LlamaRotaryEmbedding(llama_config("default"))
        cos, sin = rotary(torch.zeros(1), torch.from_numpy(positions)[None])
        hf = modeling.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin)
    else:
        modeling = _modeling("gptj")
        table = modeling.create_sinusoidal_positions(spec.offset + spec.length, HEAD_DIM)[positions]
        sin, cos = torch.split(table[None], HEAD_DIM // 2, dim=-1)
        # GPT-J's tensors are [batch, seq, heads, head_dim]
        hf = [modeling.apply_rotary_pos_emb(torch.from_numpy(x).transpose(1, 2), sin, cos).transpose(1, 2)
              for x in (q, k)]
    got = np.stack([t.double().numpy() for t in hf])
    cache = cache_reference(spec)
    want = apply_reference(spec, q, k, positions, cache)
    allowed = apply_tolerance(spec, q, k, positions, cache, cache_tolerance(spec))
    assert np.max(np.abs(got - want) / allowed) <= 1.0


def test_gptj_sinusoids_are_the_interleaved_cache():
    modeling = _modeling("gptj")
    spec = RotarySpec(2048, 256, rotary_dim=64, layout="interleaved")
    table = modeling.create_sinusoidal_positions(spec.length, 64).double().numpy()
    sin, cos = table[:, :32], table[:, 32:]
    want, tol = cache_reference(spec), cache_tolerance(spec)
    for got, part in ((cos, 0), (sin, 1)):
        for parity in (0, 1):   # repeat_interleave: each frequency twice in a row
            assert np.all(np.abs(got - want[part][:, parity::2]) <= tol[part][:, parity::2])
    config = _config("gptj", "GPTJConfig", n_embd=4096, n_head=16, rotary_dim=64, n_positions=2048)
    assert RotarySpec.from_hf_config(config) == spec
    assert RotarySpec.from_hf_config(config.to_dict()) == spec


def test_gpt_neox_partial_rotary():
    modeling = _modeling("gpt_neox")
    config = _config("gpt_neox", "GPTNeoXConfig", hidden_size=512, num_attention_heads=4, num_hidden_layers=1,
                     rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=2048)
    spec = RotarySpec.from_hf_config(config, length=2048)
    assert (spec.head_dim, spec.rot, spec.layout) == (128, 32, "half")
    cos, sin = _hf_cos_sin(modeling.GPTNeoXRotaryEmbedding(config), np.arange(2048))
    want, tol = cache_reference(spec), cache_tolerance(spec)
    assert cos.shape == (2048, 32)
    assert np.all(np.abs(cos - want[0]) <= tol[0]) and np.all(np.abs(sin - want[1]) <= tol[1])
    # GPT-NeoX's config.json spelling, and its default of a quarter of the head
    raw = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 4, "rotary_emb_base": 10000,
           "max_position_embeddings": 2048}
    assert RotarySpec.from_hf_config(raw) == spec
    assert RotarySpec.from_hf_config({**raw, "rotary_pct": 1.0}).rot == 128


def test_v4_rope_scaling_and_v5_rope_parameters_read_the_same():
    llama31 = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
               "rope_theta": 500000.0,
               "rope_scaling": {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    v5 = {**llama31, "rope_parameters": {**llama31.pop("rope_scaling"), "rope_theta": 500000.0},
          "rope_theta": None}
    v5["rope_parameters"]["rope_type"] = v5["rope_parameters"].pop("type")
    old = RotarySpec.from_hf_config({**llama31, "rope_scaling": {**v5["rope_parameters"]}})
    assert old == RotarySpec.from_hf_config(v5) == RotarySpec(
        131072, 128, base=500000.0, rope_type="llama3", factor=8.0, original_max_position_embeddings=8192)
    config = _config("llama", "LlamaConfig", **{**llama31, "rope_scaling": v5["rope_parameters"]})
    spec = RotarySpec.from_hf_config(config, length=64)
    assert spec == old.replace(length=64)


def test_yarn_and_longrope_derive_a_missing_factor_like_transformers():
    deepseek = {"hidden_size": 512, "num_attention_heads": 4, "max_position_embeddings": 16384,
                "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": None,
                                    "original_max_position_embeddings": 4096}}
    spec = RotarySpec.from_hf_config(deepseek, length=100)
    config = _config("llama", "LlamaConfig", **{**deepseek, "head_dim": 128, "num_hidden_layers": 1})
    hf_inv, hf_scale = rope_utils.ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    assert spec.factor == 4.0 and spec.attention_scaling == pytest.approx(hf_scale, rel=1e-15)
    rel = np.abs(spec.inv_freq() / hf_inv.double().numpy() - 1)
    assert np.all(rel <= allowed_float32_rel(spec.inv_freq()))


def test_phi3_longrope_config():
    scaling = {"short_factor": [1.0] * 48, "long_factor": [2.0] * 48}
    raw = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
           "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
           "rope_scaling": {"type": "su", **scaling}}
    spec = RotarySpec.from_hf_config(raw, length=8192)       # Phi-3's legacy "su" is longrope
    assert (spec.rope_type, spec.original_max_position_embeddings, spec.factor) == ("longrope", 4096, 32.0)
    assert spec.attention_scaling == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    assert spec.inv_freq()[0] == 0.5                               # long factors: 8192 > 4096
    config = _config("phi3", "Phi3Config", **{**raw, "num_hidden_layers": 1,
                                               "rope_scaling": {"type": "longrope", **scaling}})
    assert RotarySpec.from_hf_config(config, length=8192) == spec
    _, hf_scale = rope_utils.ROPE_INIT_FUNCTIONS["longrope"](config, "cpu", seq_len=8192)
    assert spec.attention_scaling == pytest.approx(hf_scale, rel=1e-15)


@pytest.mark.parametrize("params, message", [
    ({"rope_type": "proportional", "rope_theta": 1e4}, "rope_type must be one of .*longrope"),
    ({"rope_type": "linear", "rope_theta": 1e4}, r"rope_parameters\['factor'\] is required"),
    ({"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.3}, "even number"),
    ({"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}},
     "per layer type"),
])
def test_bad_configs_are_value_errors(params, message):
    config = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64,
              "rope_parameters": params}
    with pytest.raises(ValueError, match=message):
        RotarySpec.from_hf_config(config)
    with pytest.raises(ValueError, match="length is required"):
        RotarySpec.from_hf_config({"head_dim": 64})


def test_transformers_float64_cache_is_only_float32_accurate():
    """A finding (docs/rotary.md): LlamaRotaryEmbedding computes inv_freq and the angles in float32 and
    casts at the end, so a float64 model's cache meets the float32 contract only, never the exact one."""
    modeling = _modeling("llama")
    rotary = modeling.LlamaRotaryEmbedding(llama_config("default"))
    cos, _ = rotary(torch.zeros(1, dtype=torch.float64), torch.arange(4096)[None])
    assert cos.dtype == torch.float64
    spec = RotarySpec(4096, HEAD_DIM, dtype="float64")
    err = np.abs(cos[0].numpy() - cache_reference(spec)[0])
    assert np.max(err / exact_cache_tolerance(spec)[0]) > 1e3
    assert np.all(err <= cache_tolerance(spec)[0])              # the float32 grade


def test_gptj_dict_without_rotary_dim_uses_the_config_default():
    raw = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_positions": 2048}
    assert RotarySpec.from_hf_config(raw).rotary_dim == 64
    assert RotarySpec.from_hf_config({**raw, "rotary_dim": None}).rotary_dim is None
