"""diffusers' 2-D and 3-D sincos grids, `get_2d_sincos_pos_embed` and `get_3d_sincos_pos_embed`,
called as its PatchEmbed and CogVideoX's patch embedding call them.

diffusers 0.42 computes in torch only (`output_type` is accepted and ignored; the NumPy variants
are gone): positions are float32, frequencies float64, the table float64, cast to the spec's
dtype in the call as PatchEmbed's `.float()` does. docs/grid.md has the conventions.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from harness import register
from harness.core.kinds.grid import GridSpec

from harness import GridSupports
from ._common import LibrarySupports, torch_dtype

#: What both functions hard-code, and why a spec with another value is refused.
_FIXED = {
    "layout": ("concat", "places each axis's sin block then its cos block"),
    "cos_first": (False, "puts sin first (it has no flip_sin_to_cos)"),
    "base": (10000.0, "hard-codes 10000 ** (-k / (width / 2))"),
    "freq_shift": (0.0, "hard-codes the paper schedule"),
    "coords": ("index", "scales integer indices"),
    "start": (0.0, "counts from 0"),
}
_2D = dict(_FIXED, split=((1, 1), "halves the channels between x and y"),
           axis_order=((1, 0), "puts x's block first (meshgrid(w, h), 'here w goes first')"))
_3D = dict(_FIXED, split=((2, 3, 3), "gives t d/4 and x, y 3d/8 each"),
           axis_order=((0, 2, 1), "orders the channels t, x, y"),
           extra=(0, "adds no extra rows"), base_size=(None, "has no base_size"))


def _fixed(ndim: int, fixed: dict[str, tuple[Any, str]]) -> Callable[[GridSpec], Optional[str]]:
    """A limit refusing another grid rank or any field that differs from what the function fixes."""
    def check(spec: GridSpec) -> Optional[str]:
        if spec.ndim != ndim:
            return f"builds {ndim}-D grids only, got grid={spec.grid}"
        for name, (value, why) in fixed.items():
            if getattr(spec, name) != value:
                return f"{why}: {name}={value!r} only, got {getattr(spec, name)!r}"
        return None

    check.__doc__ = f"{ndim}-D " + " ".join(f"{k}={v!r}" for k, (v, _) in fixed.items()
                                          if k in ("split", "axis_order"))
    return check


def _one_scale_2d(spec: GridSpec) -> Optional[str]:
    """one base_size/scale"""
    scales = spec.interpolation_scale
    if scales[0] != scales[1]:
        return f"takes one interpolation_scale for both axes, got {scales}"
    if spec.base_size is None and spec.grid[0] != spec.grid[1]:
        return ("divides every axis by n / base_size with one base_size: unscaled positions "
                f"(base_size=None) need a square grid, got {spec.grid}")
    return None


def _one_spatial_scale(spec: GridSpec) -> Optional[str]:
    """one spatial scale"""
    scales = spec.interpolation_scale
    if scales[1] != scales[2]:
        return f"takes one spatial_interpolation_scale for y and x, got {scales}"
    return None


def _float64_positions_exact(spec: GridSpec) -> Optional[str]:
    """f64: exact f32 positions"""
    if spec.dtype != "float64":
        return None
    for n, rescale in zip(spec.grid, spec.rescale):
        index = np.arange(n, dtype=np.float64)
        if not np.array_equal(_float32_positions(spec, n, rescale), index * rescale):
            return ("computes positions in float32, inexact here (float64 only where every "
                    "position is exact in float32)")
    return None


def _float32_positions(spec: GridSpec, n: int, rescale: float) -> np.ndarray:
    """The positions diffusers computes for one axis, in float32 as torch does."""
    index = np.arange(n, dtype=np.float32)
    if spec.ndim == 2:
        base_size = spec.base_size or n
        scale = spec.interpolation_scale[0]
        return (index / np.float32(n / base_size) / np.float32(scale)).astype(np.float64)
    return (index / np.float32(1.0 / rescale)).astype(np.float64)


def _supports(*limits) -> LibrarySupports:
    return LibrarySupports("diffusers", GridSupports(), (*limits, _float64_positions_exact))


def _register(name: str, supports: LibrarySupports):
    return register(name=name, backend="torch", workload="grid", library="diffusers",
                    requires=("diffusers",), supports=supports)


@_register("diffusers-2d-sincos", _supports(_fixed(2, _2D), _one_scale_2d))
def build_2d_sincos(spec: GridSpec):
    """get_2d_sincos_pos_embed(d, grid_size=(H, W), cls_token=extra > 0, extra_tokens=extra,
    interpolation_scale, base_size) (base_size = the side when the spec has none), .to(dtype)."""
    from diffusers.models.embeddings import get_2d_sincos_pos_embed

    height = spec.grid[0]
    kwargs = dict(embed_dim=spec.d_model, grid_size=spec.grid, cls_token=spec.extra > 0,
                  extra_tokens=spec.extra, interpolation_scale=spec.interpolation_scale[0],
                  base_size=spec.base_size or height)
    dtype = torch_dtype(spec.dtype)
    return lambda: get_2d_sincos_pos_embed(**kwargs).to(dtype)


@_register("diffusers-3d-sincos", _supports(_fixed(3, _3D), _one_spatial_scale))
def build_3d_sincos(spec: GridSpec):
    """get_3d_sincos_pos_embed(d, spatial_size=(W, H), temporal_size=T, spatial_ and
    temporal_interpolation_scale), [T, H * W, d] flattened to rows, .to(dtype)."""
    from diffusers.models.embeddings import get_3d_sincos_pos_embed

    frames, height, width = spec.grid
    kwargs = dict(embed_dim=spec.d_model, spatial_size=(width, height), temporal_size=frames,
                  spatial_interpolation_scale=spec.interpolation_scale[1],
                  temporal_interpolation_scale=spec.interpolation_scale[0])
    dtype, d_model = torch_dtype(spec.dtype), spec.d_model
    return lambda: get_3d_sincos_pos_embed(**kwargs).reshape(-1, d_model).to(dtype)
