"""Triton: the rotary (RoPE) cos/sin cache and a fused apply, one kernel each, on the GPU.

Both form each (position, frequency) angle in float64, reduce it modulo 2 pi in float64 and take
one float32 cos and sin of the reduced angle (float64 for a float64 spec), as impls/table/triton.py's
table kernel does (impls/table/_device_columns.py says why: ~2e-7 at a million positions, where float32
angles are off by 2e-2). The cache kernel computes each (position, frequency) once and writes it
to both of its columns: two contiguous stores for "half" (cat(f, f)), one store of the pairs
interleaved for "interleaved". The apply kernel builds no cache: a program takes a block of
positions of one sequence, forms their cos/sin once in registers, then rotates ROWS heads of q
and k (and copies the tail past rot) in one pass, so q and k are read and written once each. It
addresses q and k by strides, so heads-first and sequence-first memory are one kernel; k may
have fewer heads than q (the heads of a program run over q's, then k's); position ids may be
one row per sequence; and an output may be its input (in place).

No autotune: on the last H100 run (impls/table/triton.py) a Python launch cost ~30 us with the
autotune wrapper, and the small caches RoPE uses are launch-bound, so tiles are picked by a
rule at setup and the grid and arguments are fixed before the timed call. `cache_launcher` and
`apply_launcher` take tensors on any device, so tests run them on the CPU under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from harness import ApplyForms
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


def _strides(x, seq_first: bool) -> tuple[int, int, int]:
    """(batch, head, seq) strides of a `[batch, heads, seq, d]` or `[batch, seq, heads, d]` tensor
    whose last axis is contiguous."""
    if x.stride(-1) != 1:
        raise ValueError(f"the head_dim axis must be contiguous, got strides {tuple(x.stride())}")
    return (x.stride(0), x.stride(2), x.stride(1)) if seq_first else tuple(x.stride()[:3])


@dataclass(frozen=True)
class ApplyTiles:
    """How an apply launch is cut: `tile` elements of (positions x frequencies) per program,
    up to `max_rows` heads per program while at least `min_programs` programs remain, and
    `num_warps` per program. The defaults are the rule; scripts/tune_triton_rotary.py times
    others on a GPU (and a test lowers min_programs to reach the loop over heads)."""

    tile: int = TILE
    max_rows: int = MAX_ROWS
    min_programs: int = MIN_PROGRAMS
    num_warps: int = 4


def apply_launcher(spec: RotarySpec, q, k, positions, inv_freq, scale, seq_first: bool = False,
                   in_place: bool = False, tiles: ApplyTiles = ApplyTiles()):
    """launch(q, k, oq, ok): q and k (`[batch, heads, seq, head_dim]`, or `[batch, seq, heads,
    head_dim]` when seq_first; k may have fewer heads) rotated into oq and ok of the same
    strides (oq is q itself in place: the tail past rot is then left as it is) at int64 position
    ids `[seq]` or `[batch, seq]`. A program takes a block of positions of one sequence and some
    of the heads (`tiles`)."""
    _, apply_kernel = kernels()
    batch, seq = q.shape[0], q.shape[1 if seq_first else 2]
    q_heads, k_heads = q.shape[2 if seq_first else 1], k.shape[2 if seq_first else 1]
    block_f = _pow2(spec.n_freq)
    block_s = min(_pow2(seq), max(1, tiles.tile // block_f))
    blocks, heads = -(-seq // block_s), q_heads + k_heads
    rows = max(1, min(tiles.max_rows, heads, (blocks * batch * heads) // tiles.min_programs))
    grid = (blocks, batch, -(-heads // rows))
    tail = spec.head_dim - spec.rot
    flags = dict(INTERLEAVED=spec.layout == "interleaved", WIDE=spec.dtype == "float64",
                 TAIL=tail > 0 and not in_place, ROWS=rows, BLOCK_S=block_s, BLOCK_F=block_f,
                 BLOCK_T=_pow2(max(tail, 1)))
    pos_batch = positions.stride(0) if positions.dim() == 2 else 0
    sizes = (seq, q_heads, k_heads, spec.head_dim, spec.n_freq, spec.rot,
             *_strides(q, seq_first), *_strides(k, seq_first), pos_batch)

    def launch(q, k, oq, ok, ids=positions):     # ids: other position ids of the same form
        apply_kernel[grid](q, k, oq, ok, ids, inv_freq, scale, *sizes, **flags,
                           num_warps=tiles.num_warps)

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


#: Every form: both memory layouts, k with fewer heads, position ids per sequence.
FORMS = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True)


class _Launches:
    """One launcher per form of the inputs a call is handed (shapes and strides of q, k and the
    position ids): the grid and strides are worked out on the first call of a form, in Python,
    and reused (a model calls with the same shapes every step)."""

    def __init__(self, spec: RotarySpec, in_place: bool) -> None:
        self.spec, self.in_place = spec, in_place
        self.constants = constants(spec, DEVICE)
        self.launchers: dict[tuple, Any] = {}

    def __call__(self, q, k, positions, oq, ok) -> None:
        key = (tuple(q.shape), q.stride(), tuple(k.shape), k.stride(), tuple(positions.shape),
               positions.stride())
        launch = self.launchers.get(key)
        if launch is None:
            launch = self.launchers[key] = apply_launcher(
                self.spec, q, k, positions, *self.constants,
                seq_first=self.spec.qk_layout == "bshd", in_place=self.in_place)
        launch(q, k, oq, ok, positions)


@register(name="triton-rotary-apply-fused", backend="triton", device=DEVICE, workload="apply",
          supports=EVERY_SPEC, forms=FORMS)
def build_triton_rotary_apply_fused(spec: RotarySpec):
    """One Triton kernel, no cache: each block's cos/sin once in registers (float64 angle), then
    q and k of several heads rotated and the tail copied in one pass."""
    import torch

    launch = _Launches(spec, in_place=False)

    def apply(q, k, positions):
        oq, ok = torch.empty_like(q), torch.empty_like(k)
        launch(q, k, positions, oq, ok)
        return oq, ok

    return apply


@register(name="triton-rotary-apply-inplace", backend="triton", device=DEVICE, workload="apply",
          supports=EVERY_SPEC, forms=replace(FORMS, in_place=True))
def build_triton_rotary_apply_inplace(spec: RotarySpec):
    """triton-rotary-apply-fused rotating q and k where they are, as Liger's and FlashAttention's
    in-place kernels do (the tail is not touched); the harness hands every call fresh ones."""
    launch = _Launches(spec, in_place=True)

    def apply(q, k, positions):
        launch(q, k, positions, q, k)
        return q, k

    return apply
