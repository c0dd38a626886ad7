"""torch: rotary caches and apply on the CPU and on CUDA, as model code does them and faster.

`-cache` and `-apply-unfused` are transformers' Llama rotary (GPT-J's for the interleaved layout):
float32 angles, cos/sin of every column, then `q * cos + rotate_half(q) * sin`, each step a new
tensor. `-cache-fast` computes the n_freq distinct columns by float64-table angle addition and
writes them twice. `-apply-fused` builds no cache: float64 cos/sin of each (position, frequency)
once (torch's float64 sin is vectorised), rounded to the dtype, then two `mul(out=)` +
`addcmul_` per half straight into the output's column views, so no rotate_half or cat temporary
is made. `-apply-cached` keeps the fast cache of every position from setup and gathers its
distinct columns at the positions before the same rotation.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register

from ._rotary_model import build_fast_cache, build_model_apply, build_model_cache, torch_ops
from ._rotary_support import EVERY_SPEC
from ._rotary_tables import pair_slices


class Rotation:
    """One spec on one device: its pair columns, float64 frequencies, and the in-place rotation."""

    def __init__(self, spec: RotarySpec, device: str):
        import torch

        self.torch, self.spec, self.device = torch, spec, device
        self.dtype = getattr(torch, spec.dtype)
        self.first, self.second = pair_slices(spec)
        self.inv_freq = torch.from_numpy(spec.inv_freq()).to(device)

    def tensor(self, x: np.ndarray, dtype=None):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.device, dtype or self.dtype)

    def sincos(self, positions):
        """cos and sin `[seq, n_freq]` of float64 positions, scaled, rounded to the dtype once."""
        theta = positions[:, None] * self.inv_freq[None, :]
        scale = self.spec.attention_scaling
        return (theta.cos() * scale).to(self.dtype), (theta.sin() * scale).to(self.dtype)

    def rotate(self, x, cos, sin):
        """A fresh `[batch, heads, seq, head_dim]`: the pairs rotated by cos, sin `[seq, n_freq]`."""
        torch, rot = self.torch, self.spec.rot
        out = torch.empty_like(x)
        x1, x2 = x[..., self.first], x[..., self.second]
        o1, o2 = out[..., self.first], out[..., self.second]
        with torch.no_grad():
            torch.mul(x1, cos, out=o1)
            o1.addcmul_(x2, sin, value=-1)
            torch.mul(x2, cos, out=o2)
            o2.addcmul_(x1, sin)
            if rot < self.spec.head_dim:
                out[..., rot:] = x[..., rot:]
        return out


def fused(spec: RotarySpec, q, k, positions, device: str = "cpu"):
    rotation = Rotation(spec, device)
    qx, kx = rotation.tensor(q), rotation.tensor(k)
    position_ids = rotation.tensor(positions, rotation.torch.int64)

    def apply():
        cos, sin = rotation.sincos(position_ids.double())
        return rotation.rotate(qx, cos, sin), rotation.rotate(kx, cos, sin)

    return apply


def cached(spec: RotarySpec, q, k, positions, device: str = "cpu"):
    rotation = Rotation(spec, device)
    qx, kx = rotation.tensor(q), rotation.tensor(k)
    rows = rotation.tensor(positions - spec.offset, rotation.torch.int64)
    cos_all, sin_all = (t[:, rotation.first] for t in build_fast_cache(torch_ops(device), spec)())

    def apply():
        cos, sin = cos_all.index_select(0, rows), sin_all.index_select(0, rows)
        return rotation.rotate(qx, cos, sin), rotation.rotate(kx, cos, sin)

    return apply


@register(name="rotary-torch-cache", backend="torch", workload="cache", supports=EVERY_SPEC)
def build_rotary_torch_cache(spec: RotarySpec):
    """transformers' cache: float32 inv_freq x positions, cat(freqs, freqs), cos/sin * scaling, cast."""
    return build_model_cache(torch_ops("cpu"), spec)


@register(name="rotary-torch-cache-fast", backend="torch", workload="cache", supports=EVERY_SPEC)
def build_rotary_torch_cache_fast(spec: RotarySpec):
    """n_freq distinct columns by float64-table angle addition, written twice: accurate at any position."""
    return build_fast_cache(torch_ops("cpu"), spec)


@register(name="rotary-torch-apply-unfused", backend="torch", workload="apply", supports=EVERY_SPEC)
def build_rotary_torch_apply_unfused(spec: RotarySpec, q, k, positions):
    """transformers' apply_rotary_pos_emb: the cache at the positions, x * cos + rotate_half(x) * sin."""
    return build_model_apply(torch_ops("cpu"), spec, q, k, positions)


@register(name="rotary-torch-apply-fused", backend="torch", workload="apply", supports=EVERY_SPEC)
def build_rotary_torch_apply_fused(spec: RotarySpec, q, k, positions):
    """No cache: float64 cos/sin once per (position, frequency), mul + addcmul_ into the output."""
    return fused(spec, q, k, positions)


@register(name="rotary-torch-apply-cached", backend="torch", workload="apply", supports=EVERY_SPEC)
def build_rotary_torch_apply_cached(spec: RotarySpec, q, k, positions):
    """Fast cache of every position from setup; the call gathers rows at the positions and rotates."""
    return cached(spec, q, k, positions)


@register(name="rotary-torch-cuda-cache", backend="torch", device="cuda", workload="cache",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_cache(spec: RotarySpec):
    """rotary-torch-cache on the GPU: transformers' cache as it runs there."""
    return build_model_cache(torch_ops("cuda"), spec)


@register(name="rotary-torch-cuda-cache-fast", backend="torch", device="cuda", workload="cache",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_cache_fast(spec: RotarySpec):
    """rotary-torch-cache-fast on the GPU: distinct columns by angle addition, written twice."""
    return build_fast_cache(torch_ops("cuda"), spec)


@register(name="rotary-torch-cuda-apply-unfused", backend="torch", device="cuda", workload="apply",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_apply_unfused(spec: RotarySpec, q, k, positions):
    """transformers' apply_rotary_pos_emb on the GPU, cache built for the positions first."""
    return build_model_apply(torch_ops("cuda"), spec, q, k, positions)


@register(name="rotary-torch-cuda-apply-fused", backend="torch", device="cuda", workload="apply",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_apply_fused(spec: RotarySpec, q, k, positions):
    """No cache on the GPU: float64 cos/sin once per (position, frequency), rotated into the output."""
    return fused(spec, q, k, positions, "cuda")


@register(name="rotary-torch-cuda-apply-cached", backend="torch", device="cuda", workload="apply",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_apply_cached(spec: RotarySpec, q, k, positions):
    """Cache of every position on the GPU from setup; the call gathers rows and rotates."""
    return cached(spec, q, k, positions, "cuda")
