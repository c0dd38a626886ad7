"""Named grid conventions (spec fields by a short name) and the spec bench times for a cell.

Each is what a library builds, checked against the library itself in tests/test_grid_libraries.py
where it is installed (diffusers, transformers); docs/grid.md says where they disagree.
"""

from __future__ import annotations

import math
from typing import Any

from harness.core.kinds.grid.spec import GridSpec

#: The first is the default: bench times each implementation in the first it supports.
CONVENTIONS: dict[str, dict[str, Any]] = {
    # MAE's get_2d_sincos_pos_embed(cls_token=True): x first ("emb_h" encodes w), sin | cos
    "mae": {"axis_order": (1, 0), "extra": 1},
    # DiT / diffusers PatchEmbed at its trained size: MAE's table without the cls row
    "dit": {"axis_order": (1, 0)},
    # PixArt-alpha 1024 (diffusers): positions i / (n / 64) / 2
    "pixart-1024": {"axis_order": (1, 0), "base_size": 64, "interpolation_scale": 2.0},
    # DETR (normalize=True): y first, sin cos pairs, (i + 1) / (n + 1e-6) * 2 pi
    "detr": {"layout": "interleaved", "coords": "normalized", "start": 1.0, "norm_eps": 1e-6},
    # Deformable DETR: the same with (i + 1 - 0.5)
    "deformable-detr": {"layout": "interleaved", "coords": "normalized", "start": 0.5,
                        "norm_eps": 1e-6},
    # timm build_sincos2d_pos_embed: sin of y, sin of x, cos of y, cos of x
    "timm-sincos2d": {"layout": "function_major"},
    # diffusers get_3d_sincos_pos_embed: t gets d/4, x and y 3d/8 each; channels t, x, y
    "diffusers-3d": {"split": (2, 3, 3), "axis_order": (0, 2, 1)},
    # CogVideoX's patch embedding: diffusers-3d with spatial interpolation 1.875
    "cogvideox": {"split": (2, 3, 3), "axis_order": (0, 2, 1),
                  "interpolation_scale": (1.0, 1.875, 1.875)},
}


def convention_ndim(convention: str) -> int:
    """2 or 3: the grid a convention's per-axis fields are written for."""
    fields = CONVENTIONS[convention]
    sized = [v for k, v in fields.items() if k in ("split", "axis_order") or isinstance(v, tuple)]
    return len(sized[0]) if sized else 2


def near_square(cells: int) -> tuple[int, int]:
    """(h, w), h <= w, h * w >= cells and as close to it as a near-square allows."""
    h = max(1, math.isqrt(cells))
    return h, -(-cells // h)


def grid_for(cells: int, ndim: int) -> tuple[int, ...]:
    """About `cells` grid points: a near-square h x w, or t frames of one for 3-D."""
    if ndim == 2:
        return near_square(cells)
    frames = max(1, round(cells ** (1 / 3)))
    return (frames, *near_square(-(-cells // frames)))


def bench_spec(length: int, width: int, dtype: str, convention: str) -> GridSpec:
    """The spec bench times for about `length` grid cells of `width` channels."""
    return GridSpec(grid_for(length, convention_ndim(convention)), width, dtype=dtype,
                    **CONVENTIONS[convention])
