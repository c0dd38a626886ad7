"""x-transformers' ScaledSinusoidalEmbedding and RotaryEmbedding, called as its Decoder calls them.

ScaledSinusoidalEmbedding multiplies the table by a learned scalar (initialised to d ** -0.5):
the factory sets it to 1, as a checkpoint may set it to anything, so the call is the table.
Both keep float32 inv_freq buffers and compute float32 angles.
"""

from __future__ import annotations

from typing import Optional

from harness import Spec, Supports, register
from harness.core.kinds.rotary import RotarySpec

from ._common import even_width, float32_angles, float32_positions, LibrarySupports


def _interpolation(spec: RotarySpec) -> Optional[str]:
    """rope_type default/linear factor>=1"""
    if spec.rope_type not in ("default", "linear"):
        return f"has interpolation_factor (linear) only, got rope_type={spec.rope_type!r}"
    if spec.factor < 1:
        return f"asserts interpolation_factor >= 1, got factor={spec.factor}"
    if spec.rot <= 2:   # its base rescale divides by (dim - 2)
        return f"divides by rotary_dim - 2 when built, so rotary_dim must be > 2, got {spec.rot}"
    return None


@register(name="x-transformers-scaled-sinusoidal", backend="torch", library="x-transformers",
          requires=("x_transformers",), supports=LibrarySupports("x-transformers", Supports(
              layouts=("concat",), dtypes=("float32",), freq_shifts=(0,)), (even_width,)))
def build_scaled_sinusoidal(spec: Spec):
    """ScaledSinusoidalEmbedding(d, theta=base)(x[1, length, d], offset=offset) with scale 1:
    concat sin | cos, paper schedule; float32 only (its buffer and angles are float32)."""
    import torch
    from x_transformers.x_transformers import ScaledSinusoidalEmbedding

    module = ScaledSinusoidalEmbedding(spec.d_model, theta=spec.base)
    with torch.no_grad():
        module.scale.fill_(1.0)
    one = torch.zeros((1, 1, 1))
    shape, offset = (1, spec.length, spec.d_model), spec.offset

    @torch.no_grad()
    def table():
        return module(one.expand(shape), offset=offset)

    return table


@register(name="x-transformers-rope-apply", backend="torch", workload="apply", library="x-transformers",
          requires=("x_transformers",), supports=LibrarySupports("x-transformers", float32_angles(
              "interleaved", "angles are float32, cast to the input's dtype"), (_interpolation, float32_positions)))
def build_x_transformers_rope(spec: RotarySpec):
    """freqs, scale = RotaryEmbedding(rot, base=base, interpolation_factor=factor)(positions), then
    apply_rotary_pos_emb(q, freqs, scale) and (k, ...): interleaved (pairs), rotates the first rot."""
    import torch
    from x_transformers.x_transformers import RotaryEmbedding, apply_rotary_pos_emb

    module = RotaryEmbedding(spec.rot, base=spec.base, interpolation_factor=spec.factor)

    @torch.no_grad()
    def apply(q, k, positions):
        freqs, scale = module(positions)
        return apply_rotary_pos_emb(q, freqs, scale), apply_rotary_pos_emb(k, freqs, scale)

    return apply
