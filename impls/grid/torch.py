"""torch grids: diffusers' meshgrid + cat and the broadcast design, on the CPU and on a GPU.

Angles are computed in float32 for float32 and half outputs (float64 for float64), as
diffusers' torch code computes its grid; `-cuda-` runs the same on the GPU (no host sync in
the call, so it can be captured as a CUDA graph).
"""

from __future__ import annotations

from harness import register
from harness.core.kinds.grid import GridSpec

from ._assemble import GridOps, broadcast_table, meshgrid_table, prepare
from harness import GridSupports

EVERY_DTYPE = GridSupports()


def _ops(spec: GridSpec, device: str) -> GridOps:
    import torch

    out = getattr(torch, spec.dtype)
    compute = torch.float64 if spec.dtype == "float64" else torch.float32
    return GridOps(
        asarray=lambda a: torch.as_tensor(a, dtype=compute, device=device),
        meshgrid=lambda arrays: torch.meshgrid(*arrays, indexing="ij"),
        outer=lambda a, b: torch.outer(a.reshape(-1), b),
        concat=lambda parts: torch.cat(parts, dim=-1),
        cat_rows=lambda parts: torch.cat(parts, dim=0),
        interleave=lambda a, b: torch.stack([a, b], dim=-1).flatten(-2),
        zeros=lambda rows, d: torch.zeros((rows, d), dtype=out, device=device),
        empty=lambda rows, d: torch.empty((rows, d), dtype=out, device=device),
        cast=lambda x: x.to(out),
        sin=torch.sin, cos=torch.cos,
    )


def _meshgrid(spec: GridSpec, device: str):
    import torch

    ops = _ops(spec, device)
    axes = prepare(spec, ops)
    return torch.no_grad()(lambda: meshgrid_table(spec, ops, axes))


def _broadcast(spec: GridSpec, device: str):
    import torch

    ops = _ops(spec, device)
    axes = prepare(spec, ops)
    return torch.no_grad()(lambda: broadcast_table(spec, ops, axes))


@register(name="grid-torch", backend="torch", workload="grid", supports=EVERY_DTYPE, cuda="grid-torch-cuda")
def build_grid_torch(spec: GridSpec, device: str = "cpu"):
    """diffusers' way: meshgrid, each axis's 1-D sin/cos of every cell, torch.cat."""
    return _meshgrid(spec, device)


@register(name="grid-torch-broadcast", backend="torch", workload="grid", supports=EVERY_DTYPE,
          cuda="grid-torch-cuda-broadcast")
def build_grid_torch_broadcast(spec: GridSpec, device: str = "cpu"):
    """Each axis's table once, broadcast-written into strided views of the output (one strided
    copy per block)."""
    return _broadcast(spec, device)
