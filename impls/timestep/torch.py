"""torch timestep embeddings: diffusers' function as written, and an accurate one-output design,
on the CPU and on a CUDA device.

`timestep-torch-diffusers` is diffusers' `get_timestep_embedding` line by line (float32 always,
then `.to(dtype)` as its UNets do): it refuses float64, which diffusers never computes.
The designs write sin and cos with `out=` into their columns of one preallocated output (no
cat, flip or pad copies) from frequencies made once in float64, on the device.
`timestep-torch` forms the angles in float32 like diffusers (error ~|angle| 6e-8), the fast
one; `timestep-torch-reduced` forms them in float64 and reduces them to [-pi, pi] before
rounding to float32: an error of ~2e-7 at any timestep, for several float64 passes over the
angles (torch's float64 elementwise ops are ~5x its float32 sin on the CPU).
"""

from __future__ import annotations

import math

from harness import TimestepSupports, register
from harness.core.kinds.timestep import TimestepSpec

from ._common import blocks, frequencies, scaled_timesteps

DIFFUSERS_DTYPES = TimestepSupports(dtypes=("float16", "bfloat16", "float32"),
                                    why_dtypes="diffusers computes in float32")
EVERY_DTYPE = TimestepSupports()


def _diffusers(spec: TimestepSpec, device: str):
    import torch

    timesteps = torch.tensor(spec.timesteps, dtype=torch.float64, device=device)
    out_dtype = getattr(torch, spec.dtype)
    half_dim, embedding_dim = spec.half, spec.dim
    max_period, shift, scale, flip = spec.max_period, spec.freq_shift, spec.scale, spec.cos_first

    @torch.no_grad()
    def embed():
        exponent = -math.log(max_period) * torch.arange(
            start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
        exponent = exponent / (half_dim - shift)
        emb = torch.exp(exponent)
        emb = timesteps[:, None].float() * emb[None, :]
        emb = scale * emb
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
        if flip:
            emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
        if embedding_dim % 2 == 1:
            emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
        return emb.to(out_dtype)

    return embed


def _one_output(spec: TimestepSpec, device: str, reduce: bool):
    """Angles in float64 reduced to [-pi, pi] (`reduce`), or in the work dtype, then sin and cos
    into one output."""
    import torch

    freqs = torch.from_numpy(frequencies(spec)).to(device)
    scaled = torch.from_numpy(scaled_timesteps(spec)).to(device)
    out_dtype, dim = getattr(torch, spec.dtype), spec.dim
    reduce = reduce and spec.dtype != "float64"
    if not reduce and spec.dtype != "float64":
        freqs, scaled = freqs.float(), scaled.float()
    sin_cols, cos_cols = blocks(spec)

    @torch.no_grad()
    def embed():
        out = torch.empty((scaled.shape[0], dim), dtype=out_dtype, device=device)
        theta = torch.outer(scaled, freqs)
        if reduce:
            turns = torch.round_(theta * (0.5 / math.pi))
            theta = theta.add_(turns, alpha=-2 * math.pi).float()
        torch.sin(theta, out=out[:, sin_cols])
        torch.cos(theta, out=out[:, cos_cols])
        if dim % 2:
            out[:, -1] = 0
        return out

    return embed


@register(name="timestep-torch-diffusers", backend="torch", workload="timestep",
          supports=DIFFUSERS_DTYPES, cuda="timestep-torch-cuda-diffusers")
def build_torch_diffusers(spec: TimestepSpec, device: str = "cpu"):
    """diffusers' get_timestep_embedding as written: float32 exponent, exp, multiply, cat."""
    return _diffusers(spec, device)


@register(name="timestep-torch", backend="torch", workload="timestep", supports=EVERY_DTYPE)
def build_torch(spec: TimestepSpec):
    """float32 angles (float64 for float64), sin/cos written with out= into one output."""
    return _one_output(spec, "cpu", reduce=False)


@register(name="timestep-torch-reduced", backend="torch", workload="timestep", supports=EVERY_DTYPE,
          cuda="timestep-torch-cuda-reduced")
def build_torch_reduced(spec: TimestepSpec, device: str = "cpu"):
    """float64 angles reduced to [-pi, pi], float32 sin/cos written into one output (timesteps
    and frequencies moved to the device once, in setup)."""
    return _one_output(spec, device, reduce=True)
