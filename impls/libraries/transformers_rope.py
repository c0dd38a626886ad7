"""transformers' rotary embeddings: Llama's and GPT-NeoX's modules (every rope_type through the
config), and GPT-J's interleaved sinusoid table with its `apply_rotary_pos_emb`.

The module is built from a config in the factory (see _hf_config); the callable is what the
model's forward runs: `rotary_emb(x, position_ids)` for the cache, then the model's
`apply_rotary_pos_emb` for apply. They compute angles in float32 and cast cos/sin to the
activations' dtype, so float64 is refused (its error is float32's).
"""

from __future__ import annotations

from typing import Any, Optional

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register

from ._common import float32_angles, LibrarySupports, torch_dtype
from ._hf_config import rotary_module

WHY = "angles are float32, cast to the activations' dtype"
HALF = float32_angles("half", WHY)
INTERLEAVED = float32_angles("interleaved", WHY)


def _full_rotary(spec: RotarySpec) -> Optional[str]:
    """full rotary"""
    if spec.rotary_dim is not None:
        return f"rotates the whole head (Llama has no partial rotary), got rotary_dim={spec.rotary_dim}"
    return None


def _factor_exact(spec: RotarySpec) -> Optional[str]:
    """rot = int(head_dim * rot/head_dim)"""
    factor = spec.rot / spec.head_dim
    if int(spec.head_dim * factor) != spec.rot:
        return (f"partial_rotary_factor {spec.rot}/{spec.head_dim} = {factor!r} gives "
                f"int(head_dim * factor) = {int(spec.head_dim * factor)} rotated dims, not {spec.rot}")
    return None


def _gptj_rope(spec: RotarySpec) -> Optional[str]:
    """base 10000, no scaling"""
    if spec.base != 10000.0:
        return f"create_sinusoidal_positions hard-codes base 10000, got {spec.base:g}"
    if spec.rope_type != "default":
        return f"GPT-J has no rope scaling, got rope_type={spec.rope_type!r}"
    return None


def _table_fits(spec: RotarySpec) -> Optional[str]:
    """(offset+length)*rot<=2^24"""
    cells = spec.seq_len * spec.rot
    if cells > 1 << 24:
        return f"its table holds every position up to the last: {cells} cells > 2^24"
    return None


def _cache(model_type: str, spec: RotarySpec):
    import torch

    module = rotary_module(model_type, spec)
    x = torch.empty(0, dtype=torch_dtype(spec.dtype))      # only its dtype and device are read
    position_ids = torch.arange(spec.offset, spec.offset + spec.length)[None]

    def cache():
        cos, sin = module(x, position_ids)
        return cos[0], sin[0]

    return cache


def _apply(model_type: str, spec: RotarySpec):
    import importlib

    import torch

    module = rotary_module(model_type, spec)
    apply_rotary_pos_emb = importlib.import_module(
        f"transformers.models.{model_type}.modeling_{model_type}").apply_rotary_pos_emb

    @torch.no_grad()
    def apply(q, k, positions):
        cos, sin = module(q, positions[None])
        return apply_rotary_pos_emb(q, k, cos, sin)

    return apply


LLAMA = LibrarySupports("transformers Llama", HALF, (_full_rotary,))
NEOX = LibrarySupports("transformers GPT-NeoX", HALF, (_factor_exact,))


@register(name="transformers-llama-rope-cache", backend="torch", workload="cache",
          library="transformers", requires=("transformers",), supports=LLAMA)
def build_llama_cache(spec: RotarySpec):
    """LlamaRotaryEmbedding(config)(x, position_ids): float32 angles, cat(freqs, freqs), cos, sin."""
    return _cache("llama", spec)


@register(name="transformers-gpt-neox-rope-cache", backend="torch", workload="cache",
          library="transformers", requires=("transformers",), supports=NEOX)
def build_neox_cache(spec: RotarySpec):
    """GPTNeoXRotaryEmbedding(config)(x, position_ids), partial_rotary_factor = rot / head_dim."""
    return _cache("gpt_neox", spec)


@register(name="transformers-llama-rope-apply", backend="torch", workload="apply",
          library="transformers", requires=("transformers",), supports=LLAMA)
def build_llama_apply(spec: RotarySpec):
    """Llama's rotary_emb then apply_rotary_pos_emb(q, k, cos, sin) (rotate_half)."""
    return _apply("llama", spec)


@register(name="transformers-gpt-neox-rope-apply", backend="torch", workload="apply",
          library="transformers", requires=("transformers",), supports=NEOX)
def build_neox_apply(spec: RotarySpec):
    """GPT-NeoX's rotary_emb then its apply_rotary_pos_emb (rotates the first rot dims)."""
    return _apply("gpt_neox", spec)


@register(name="transformers-gptj-rope-apply", backend="torch", workload="apply",
          library="transformers", requires=("transformers",),
          supports=LibrarySupports("transformers GPT-J", INTERLEAVED, (_gptj_rope, _table_fits)))
def build_gptj_apply(spec: RotarySpec):
    """GPTJAttention's rotary steps: gather create_sinusoidal_positions rows, split sin | cos,
    apply_rotary_pos_emb (rotate_every_two) on the first rotary_dim dims, cat the rest back."""
    import torch
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb, create_sinusoidal_positions

    dtype, rot = torch_dtype(spec.dtype), spec.rot
    embed_positions = create_sinusoidal_positions(spec.seq_len, rot)

    def rotate(x: Any, sin: Any, cos: Any):
        x_rot = apply_rotary_pos_emb(x[:, :, :, :rot], sin, cos)
        return torch.cat([x_rot, x[:, :, :, rot:]], dim=-1).transpose(1, 2)

    @torch.no_grad()
    def apply(q, k, positions):
        # GPT-J's attention sees [batch, seq, heads, head_dim]: transposed views of verify's layout
        qx, kx = q.transpose(1, 2), k.transpose(1, 2)
        position_ids = positions[None].repeat(q.shape[0], 1)
        table = embed_positions.repeat(position_ids.shape[0], 1, 1)
        repeated = position_ids.unsqueeze(-1).repeat(1, 1, table.shape[-1])
        sincos = torch.gather(table, 1, repeated).to(dtype)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        return rotate(qx, sin, cos), rotate(kx, sin, cos)

    return apply
