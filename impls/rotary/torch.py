"""torch: rotary caches and apply on the CPU and on CUDA, as model code does them and faster.

`-cache` and `-apply-unfused` are transformers' Llama rotary (GPT-J's for the interleaved layout):
float32 angles, cos/sin of every column, then `q * cos + rotate_half(q) * sin`, each step a new
tensor. `-cache-fast` (CPU) gets as near a bare write as eager torch can (`FastCache`): the n_freq
distinct columns by angle addition from float64 tables, a slab of rows at a time into a scratch
that stays in L2, then one copy per slab writes both copies of each frequency (cast to the dtype)
into one NumPy-allocated output (NumPy asks for transparent huge pages, torch's allocator does
not: docs/fast.md); `-cache-recycled` writes into outputs the caller let go. `-apply-fused` builds
no cache: float64 cos/sin of each (position, frequency) once (torch's float64 sin is vectorised),
rounded to the dtype, then two `mul(out=)` + `addcmul_` per half straight into the output's column
views, so no rotate_half or cat temporary is made. `-apply-cached` keeps the fast cache of every
position from setup and gathers its distinct columns at the positions before the same rotation.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register
from harness.util.memory import first_touch
from harness.util.recycle import RecycledBuffers

from ._model import build_fast_cache, build_model_apply, build_model_cache, torch_ops
from ._supports import EVERY_SPEC
from ._tables import pair_slices, split_tables, work_dtype

#: Output bytes (cos and sin) per slab of FastCache: its work-dtype scratch stays in L2 until copied.
SLAB_BYTES = 1 << 20


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


class FastCache:
    """The CPU fast cache, a slab of coarse blocks at a time: cos and sin of the n_freq distinct
    columns as U X + V Y (U = [cc, sc], V = [-sc, cc] per coarse row; X = cf, Y = sf per fine row),
    one `mul(out=)` + one `addcmul_` into an L2 scratch in the work dtype, then one copy op writes
    both places of each frequency: `cat([f, f])` for "half", `complex(f, f)` (pairs) for
    "interleaved", both plain vectorised copies (an expanded-source copy_ was 2-3x slower). 16-bit
    dtypes get the spread in float32 and one casting copy. 4-6 ops per 1 MiB slab: per-op overhead
    (a few us) stays small beside the write, and the scratch stays in L2 until spread."""

    def __init__(self, spec: RotarySpec, recycle: bool = False):
        import torch

        self.torch, self.spec = torch, spec
        tables = split_tables(spec)
        self.work = getattr(torch, work_dtype(spec))
        cc, sc, cf, sf = (torch.from_numpy(t).to(self.work) for t in tables.cast(np.float64))
        self.U, self.V = torch.stack([cc, sc])[:, :, None], torch.stack([-sc, cc])[:, :, None]
        self.X, self.Y, self.step = cf, sf, tables.step
        bf16 = spec.dtype == "bfloat16"   # NumPy has no bfloat16: its bits in uint16, viewed
        self.np_dtype = np.dtype(np.uint16 if bf16 else spec.dtype)
        shape = (2, cc.shape[0] * self.step, spec.rot)
        fresh = lambda: first_touch(np.empty(shape, self.np_dtype))   # noqa: E731
        self.empty = RecycledBuffers(shape, self.np_dtype, allocate=fresh).take if recycle else fresh
        self.per_slab = max(1, SLAB_BYTES // (2 * self.step * spec.rot * self.np_dtype.itemsize))

    def _spread(self, distinct, into):
        """Both places of each frequency from `[..., n_freq]` distinct columns: one copy op."""
        if self.spec.layout == "half":
            self.torch.cat([distinct, distinct], -1, out=into)
        else:
            torch = self.torch
            pairs = into.view(torch.complex128 if self.work == torch.float64 else torch.complex64)
            torch.complex(distinct, distinct, out=pairs)
        return into

    def __call__(self):
        torch, spec, step, blocks = self.torch, self.spec, self.step, self.per_slab
        out = torch.from_numpy(self.empty())
        out = out.view(torch.bfloat16) if spec.dtype == "bfloat16" else out
        part = torch.empty((2, blocks, step, spec.n_freq), dtype=self.work)
        cast = out.dtype != self.work   # 16-bit: spread in float32, then one casting copy
        wide = torch.empty((2, blocks, step, spec.rot), dtype=self.work) if cast else None
        with torch.no_grad():
            for q0 in range(0, self.U.shape[1], blocks):
                U, V = self.U[:, q0:q0 + blocks], self.V[:, q0:q0 + blocks]
                k = U.shape[1]
                torch.mul(U, self.X, out=part[:, :k])
                part[:, :k].addcmul_(V, self.Y)
                for c in (0, 1):   # cos, sin: a contiguous source and destination each
                    dest = out[c, q0 * step:(q0 + k) * step].view(k, step, spec.rot)
                    if cast:
                        dest.copy_(self._spread(part[c, :k], wide[c, :k]))
                    else:
                        self._spread(part[c, :k], dest)
        return out[0, :spec.length], out[1, :spec.length]


def fused(spec: RotarySpec, device: str = "cpu"):
    rotation = Rotation(spec, device)

    def apply(q, k, positions):
        cos, sin = rotation.sincos(positions.double())
        return rotation.rotate(q, cos, sin), rotation.rotate(k, cos, sin)

    return apply


def cached(spec: RotarySpec, device: str = "cpu"):
    rotation = Rotation(spec, device)
    cos_all, sin_all = (t[:, rotation.first] for t in build_fast_cache(torch_ops(device), spec)())

    def apply(q, k, positions):
        rows = positions - spec.offset
        cos, sin = cos_all.index_select(0, rows), sin_all.index_select(0, rows)
        return rotation.rotate(q, cos, sin), rotation.rotate(k, cos, sin)

    return apply


@register(name="rotary-torch-cache", backend="torch", workload="cache", supports=EVERY_SPEC,
          cuda="rotary-torch-cuda-cache")
def build_rotary_torch_cache(spec: RotarySpec, device: str = "cpu"):
    """transformers' cache: float32 inv_freq x positions, cat(freqs, freqs), cos/sin * scaling, cast."""
    return build_model_cache(torch_ops(device), spec)


@register(name="rotary-torch-cache-fast", backend="torch", workload="cache", supports=EVERY_SPEC)
def build_rotary_torch_cache_fast(spec: RotarySpec):
    """n_freq distinct columns by float64-table angle addition, slab by slab, copied twice into a
    NumPy-allocated output: accurate at any position, near a bare write."""
    return FastCache(spec)


@register(name="rotary-torch-cache-recycled", backend="torch", workload="cache", supports=EVERY_SPEC)
def build_rotary_torch_cache_recycled(spec: RotarySpec):
    """rotary-torch-cache-fast into the memory of caches let go: no page faults, two caches kept."""
    return FastCache(spec, recycle=True)


@register(name="rotary-torch-apply-unfused", backend="torch", workload="apply", supports=EVERY_SPEC,
          cuda="rotary-torch-cuda-apply-unfused")
def build_rotary_torch_apply_unfused(spec: RotarySpec, device: str = "cpu"):
    """transformers' apply_rotary_pos_emb: the cache at the positions, x * cos + rotate_half(x) * sin."""
    return build_model_apply(torch_ops(device), spec)


@register(name="rotary-torch-apply-fused", backend="torch", workload="apply", supports=EVERY_SPEC,
          cuda="rotary-torch-cuda-apply-fused")
def build_rotary_torch_apply_fused(spec: RotarySpec, device: str = "cpu"):
    """No cache: float64 cos/sin once per (position, frequency), mul + addcmul_ into the output."""
    return fused(spec, device)


@register(name="rotary-torch-apply-cached", backend="torch", workload="apply", supports=EVERY_SPEC,
          cuda="rotary-torch-cuda-apply-cached")
def build_rotary_torch_apply_cached(spec: RotarySpec, device: str = "cpu"):
    """Fast cache of every position from setup; the call gathers rows at the positions and rotates."""
    return cached(spec, device)


@register(name="rotary-torch-cuda-cache-fast", backend="torch", device="cuda", workload="cache",
          supports=EVERY_SPEC)
def build_rotary_torch_cuda_cache_fast(spec: RotarySpec):
    """rotary-torch-cache-fast on the GPU: distinct columns by angle addition, written twice."""
    return build_fast_cache(torch_ops("cuda"), spec)
