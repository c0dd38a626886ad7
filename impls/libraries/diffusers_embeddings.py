"""diffusers' embedding functions: `get_timestep_embedding`, `get_1d_sincos_pos_embed_from_grid`
and `get_1d_rotary_pos_embed`, called as its models call them.

Positions and timesteps are tensors made in the factory; the call is the function. The timestep
embedding is float32, cast to a half dtype the way its UNets do (`.to(dtype=sample.dtype)`).
"""

from __future__ import annotations

from typing import Optional

from harness import Spec, Supports, register
from harness.core.kinds.rotary import RotarySpec
from harness.core.kinds.timestep import TimestepSpec
from harness import TimestepSupports

from harness import RotarySupports
from ._common import LibrarySupports, even_width, torch_dtype, torch_positions


def _default_or_linear(spec: RotarySpec) -> Optional[str]:
    """rope_type default/linear"""
    if spec.rope_type not in ("default", "linear"):
        return f"has theta, linear_factor and ntk_factor only, got rope_type={spec.rope_type!r}"
    return None


@register(name="diffusers-timestep-embedding", backend="torch", workload="timestep",
          library="diffusers", requires=("diffusers",), supports=TimestepSupports(
              dtypes=("float16", "bfloat16", "float32"), why_dtypes="diffusers computes in float32"))
def build_timestep_embedding(spec: TimestepSpec):
    """get_timestep_embedding(t, dim, flip_sin_to_cos=cos_first, downscale_freq_shift=freq_shift,
    scale, max_period), then .to(dtype)."""
    import torch
    from diffusers.models.embeddings import get_timestep_embedding

    timesteps = torch.tensor(spec.timesteps, dtype=torch.float32)
    dtype, dim = torch_dtype(spec.dtype), spec.dim
    flip, shift, scale, max_period = spec.cos_first, spec.freq_shift, spec.scale, spec.max_period

    def embed():
        return get_timestep_embedding(timesteps, dim, flip_sin_to_cos=flip, downscale_freq_shift=shift,
                                      scale=scale, max_period=max_period).to(dtype)

    return embed


@register(name="diffusers-1d-sincos", backend="torch", library="diffusers", requires=("diffusers",),
          supports=LibrarySupports("diffusers", Supports(
              layouts=("concat",), freq_shifts=(0,), base=False, cos_first=True), (even_width,)))
def build_1d_sincos(spec: Spec):
    """get_1d_sincos_pos_embed_from_grid(d, pos, flip_sin_to_cos=cos_first, dtype): concat, the
    paper's schedule, base 10000; positions in the spec's dtype (float64 is its default)."""
    from diffusers.models.embeddings import get_1d_sincos_pos_embed_from_grid

    dtype = torch_dtype(spec.dtype)
    pos, d_model, flip = torch_positions(spec).to(dtype), spec.d_model, spec.cos_first
    return lambda: get_1d_sincos_pos_embed_from_grid(d_model, pos, flip_sin_to_cos=flip, dtype=dtype)


@register(name="diffusers-rope-cache", backend="torch", workload="cache", library="diffusers",
          requires=("diffusers",), supports=LibrarySupports("diffusers", RotarySupports(
              dtypes=("float32",), why_dtypes="returns .float() cos and sin"), (_default_or_linear,)))
def build_rope_cache(spec: RotarySpec):
    """get_1d_rotary_pos_embed(rot, pos, theta=base, use_real=True, linear_factor=factor,
    repeat_interleave_real=interleaved): Flux/HunyuanDiT (interleaved), Stable Audio (half)."""
    from diffusers.models.embeddings import get_1d_rotary_pos_embed

    pos, rot, theta, factor = torch_positions(spec), spec.rot, spec.base, spec.factor
    interleave = spec.layout == "interleaved"
    return lambda: get_1d_rotary_pos_embed(rot, pos, theta=theta, use_real=True, linear_factor=factor,
                                           repeat_interleave_real=interleave)
