"""Triton: the rotary (RoPE) cos/sin cache and a fused apply, one kernel each, on the GPU.

Both form each (position, frequency) angle in float64, reduce it modulo 2 pi in float64 and take
one float32 cos and sin of the reduced angle (float64 for a float64 spec), as impls/table/triton.py's
table kernel does (impls/table/_device_columns.py says why: ~2e-7 at a million positions, where float32
angles are off by 2e-2). The cache kernel computes each (position, frequency) once and writes it
to both of its columns: two contiguous stores for "half" (cat(f, f)), one store of the pairs
interleaved for "interleaved". The apply kernel builds no cache: a program takes a block of
positions, forms their cos/sin once in registers, then rotates ROWS (batch x head) slices of q
and k (and copies the tail past rot) in one pass, so q and k are read and written once each.

No autotune: on the last H100 run (impls/table/triton.py) a Python launch cost ~30 us with the
autotune wrapper, and the small caches RoPE uses are launch-bound, so tiles are picked by a
rule at setup and the grid and arguments are fixed before the timed call. `cache_launcher` and
`apply_launcher` take tensors on any device, so tests run them on the CPU under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import functools

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register

from .._triton_device import DEVICE
from ._supports import EVERY_SPEC

#: Elements of a program's (positions x frequencies) tile: enough work per program to hide the
#: float64 angle, few enough registers for 4 warps.
TILE = 2048
#: Most (batch x head) slices one apply program rotates with one block's cos/sin.
MAX_ROWS = 16
#: Programs an apply launch aims for (an H100 has 132 SMs): below it, fewer rows per program.
MIN_PROGRAMS = 1024


@functools.cache
def kernels():
    """(cache kernel, apply kernel); triton is imported only here."""
    from . import _triton_kernels as k

    return k.rotary_cache, k.rotary_apply


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def constants(spec: RotarySpec, device: str):
    """(inv_freq float64 `[n_freq]`, attention scaling float64 `[1]`) on `device`."""
    import torch

    inv_freq = torch.from_numpy(spec.inv_freq()).to(device)
    scale = torch.tensor([spec.attention_scaling], dtype=torch.float64, device=device)
    return inv_freq, scale


def cache_launcher(spec: RotarySpec, inv_freq, scale):
    """launch(cos, sin): writes the cache into two contiguous `[length, rot]` tensors."""
    cache_kernel, _ = kernels()
    block_f = min(_pow2(spec.n_freq), 128)
    block_r = min(_pow2(spec.length), max(1, TILE // block_f))
    grid = (-(-spec.length // block_r), -(-spec.n_freq // block_f))
    interleaved, wide = spec.layout == "interleaved", spec.dtype == "float64"
    length, offset, n_freq = spec.length, spec.offset, spec.n_freq

    def launch(cos, sin):
        cache_kernel[grid](cos, sin, inv_freq, scale, length, offset, n_freq,
                           INTERLEAVED=interleaved, WIDE=wide, BLOCK_R=block_r, BLOCK_F=block_f)

    return launch


def apply_launcher(spec: RotarySpec, slices: int, seq: int, positions, inv_freq, scale,
                   min_programs: int = MIN_PROGRAMS):
    """launch(q, k, oq, ok): contiguous `[batch, heads, seq, head_dim]` q, k rotated into oq, ok
    (slices = batch x heads) at int64 positions `[seq]`; a program takes up to MAX_ROWS slices
    while at least `min_programs` remain (a test lowers it to reach the multi-slice loop)."""
    _, apply_kernel = kernels()
    block_f = _pow2(spec.n_freq)
    block_s = min(_pow2(seq), max(1, TILE // block_f))
    blocks = -(-seq // block_s)
    rows = max(1, min(MAX_ROWS, slices, (blocks * slices) // min_programs))
    grid = (blocks, -(-slices // rows))
    tail = spec.head_dim - spec.rot
    flags = dict(INTERLEAVED=spec.layout == "interleaved", WIDE=spec.dtype == "float64",
                 TAIL=tail > 0, ROWS=rows, BLOCK_S=block_s, BLOCK_F=block_f,
                 BLOCK_T=_pow2(max(tail, 1)))
    sizes = (slices, seq, spec.head_dim, spec.n_freq, spec.rot)

    def launch(q, k, oq, ok):
        apply_kernel[grid](q, k, oq, ok, positions, inv_freq, scale, *sizes, **flags)

    return launch


@register(name="triton-rotary-cache", backend="triton", device=DEVICE, workload="cache",
          supports=EVERY_SPEC)
def build_triton_rotary_cache(spec: RotarySpec):
    """One Triton kernel: float64 angle mod 2 pi, one float32 cos/sin per (position, frequency),
    written to both its columns."""
    import torch

    launch = cache_launcher(spec, *constants(spec, DEVICE))
    dtype, shape = getattr(torch, spec.dtype), (spec.length, spec.rot)

    def cache():
        cos = torch.empty(shape, dtype=dtype, device=DEVICE)
        sin = torch.empty(shape, dtype=dtype, device=DEVICE)
        launch(cos, sin)
        return cos, sin

    return cache


@register(name="triton-rotary-apply-fused", backend="triton", device=DEVICE, workload="apply",
          supports=EVERY_SPEC)
def build_triton_rotary_apply_fused(spec: RotarySpec, q, k, positions):
    """One Triton kernel, no cache: each block's cos/sin once in registers (float64 angle), then
    q and k of several heads rotated and the tail copied in one pass."""
    import numpy as np
    import torch

    dtype = getattr(torch, spec.dtype)
    qx, kx = (torch.from_numpy(np.ascontiguousarray(x)).to(DEVICE, dtype) for x in (q, k))
    position_ids = torch.from_numpy(np.ascontiguousarray(positions, dtype=np.int64)).to(DEVICE)
    batch, heads, seq, _ = qx.shape
    launch = apply_launcher(spec, batch * heads, seq, position_ids, *constants(spec, DEVICE))

    def apply():
        oq, ok = torch.empty_like(qx), torch.empty_like(kx)
        launch(qx, kx, oq, ok)
        return oq, ok

    return apply
