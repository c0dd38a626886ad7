"""torch: seed 000/004 (stack + flatten), seed 002 (cat, `half - 1` schedule), variants, CUDA.

`torch-stack` (stack + flatten, interleaved layouts) and `torch-cat` (one cat,
concat layouts) compute the same blocks by the direct formula and differ in how
they lay them out; `-cuda-` runs them on the GPU.
"""

from __future__ import annotations

import math
from harness import Spec, Supports, register
from harness.core.kinds.fields import DTYPES
from ._assemble import EVERY_CONVENTION, Library, register_general


def _dtype(spec: Spec):
    import torch

    return getattr(torch, spec.dtype)


#: float32/float64 only: the seeds compute positions in the output dtype, which half
#: precision cannot hold past 2048 (precision shows it; verify would only fail them)
SEED_STACK = Supports(layouts=("interleaved",), freq_shifts=(0,))
SEED_CAT = Supports(layouts=("concat",), freq_shifts=(1,))


@register(name="seed-torch-stack", backend="torch", supports=SEED_STACK, cuda="seed-torch-cuda-stack")
def build_seed_torch_stack(spec: Spec, device: str = "cpu"):
    """Seeds 000/004: torch.pow(base, even_i/d), sin/cos, torch.stack(dim=2), flatten."""
    import torch

    dtype = _dtype(spec)
    length, d_model, base, offset = spec.length, spec.d_model, spec.base, spec.offset

    def table():
        even_i = torch.arange(0, d_model, 2, dtype=dtype, device=device)
        odd_i = torch.arange(1, d_model, 2, dtype=dtype, device=device)
        position = torch.arange(offset, offset + length, dtype=dtype, device=device).reshape(-1, 1)
        even_pe = torch.sin(position / torch.pow(base, even_i / d_model))
        odd_pe = torch.cos(position / torch.pow(base, (odd_i - 1) / d_model))
        stacked = torch.stack([even_pe, odd_pe], dim=2)
        return torch.flatten(stacked, start_dim=1, end_dim=2)

    return table


@register(name="seed-torch-cat", backend="torch", supports=SEED_CAT, cuda="seed-torch-cuda-cat")
def build_seed_torch_cat(spec: Spec, device: str = "cpu"):
    """Seed 002: slope = exp(-ln(base) k/(half-1)), cat([sin, cos]) as [d, L], transposed."""
    import torch

    dtype = _dtype(spec)
    length, half, base, offset = spec.length, spec.d_model // 2, spec.base, spec.offset

    @torch.no_grad()
    def table():
        slope = (torch.arange(half, dtype=dtype, device=device) * -math.log(base) / (half - 1)).exp()
        t = slope[:, None] * torch.arange(offset, offset + length, dtype=dtype, device=device)[None, :]
        res = torch.cat([t.sin(), t.cos()], dim=0).to(dtype=dtype)
        return res.T   # the seed returns [d_model, length]

    return table


def _blocks(spec: Spec, device: str = "cpu"):
    """sin and cos [length, n_freq] by the direct formula, in the output dtype, and a zero column."""
    import torch

    out_dtype = _dtype(spec)
    # half dtypes cannot even hold positions past 2048 exactly (or 65504 at all): work in float32
    dtype = torch.float32 if spec.itemsize == 2 else out_dtype
    k = torch.arange(spec.n_freq, dtype=dtype, device=device)
    denominator = torch.pow(spec.base, k / spec.denominator)
    position = torch.arange(spec.offset, spec.offset + spec.length, dtype=dtype, device=device)[:, None]
    theta = spec.scale * position / denominator   # scale 1.0 multiplies exactly
    zero_col = torch.zeros((spec.length, 1), dtype=out_dtype, device=device)
    return torch.sin(theta).to(out_dtype), torch.cos(theta).to(out_dtype), zero_col


def _stack(a, b):
    import torch

    return torch.flatten(torch.stack([a, b], dim=2), start_dim=1)


def _concat(parts):
    import torch

    return torch.cat(parts, dim=1)


TORCH = Library(_blocks, interleave=_stack, concat=_concat)

#: torch has every dtype of the Spec, half precision included (angles in float32 for halves).
register_general(TORCH, "torch", "torch", __name__, ("torch.stack(dim=2) + flatten", "torch.cat([sin, cos], dim=1)"),
                 dtypes=DTYPES, cuda=True)


@register(name="torch-forward", backend="torch", workload="forward", supports=EVERY_CONVENTION)
def build_torch_forward(spec: Spec):
    """x + PE with the table kept from the factory, like register_buffer in seeds 001/002."""
    import torch

    pe = TORCH.table(spec, "cpu")

    @torch.no_grad()
    def forward(x):
        return x + pe

    return forward
