"""Truth from the libraries themselves: diffusers' 2-D/3-D sincos grids and transformers' DETR
sine embeddings, each matched by one GridSpec (docs/grid.md says which fields and why).

The libraries compute their positions in float32, so they are held to the float32 tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.kinds.grid import CONVENTIONS, GridSpec, reference, tolerance


def assert_matches(table: np.ndarray, spec: GridSpec) -> None:
    assert table.shape == (spec.rows, spec.d_model)
    err = np.abs(np.asarray(table, dtype=np.float64) - reference(spec))
    allowed = tolerance(spec.replace(dtype="float32"))
    worst = np.unravel_index(np.argmax(err / allowed), err.shape)
    assert np.all(err <= allowed), f"error {err[worst]:.3g} > {allowed[worst]:.3g} at {worst}"


def assert_differs(table: np.ndarray, spec: GridSpec) -> None:
    """The spec is wrong for this table by far more than any rounding."""
    assert table.shape != (spec.rows, spec.d_model) or np.abs(table - reference(spec)).max() > 1e-2


@pytest.fixture(scope="module")
def diffusers_embeddings():
    pytest.importorskip("diffusers")
    from diffusers.models import embeddings

    return embeddings


def _name(value):
    return value.short() if isinstance(value, GridSpec) else None


# (get_2d_sincos_pos_embed's arguments, the spec that reproduces it)
DIFFUSERS_2D = [
    # at its trained size (grid == base_size) it is MAE's table; the cls row needs both flags
    (dict(embed_dim=64, grid_size=16, cls_token=True, extra_tokens=1),
     GridSpec((16, 16), 64, **CONVENTIONS["mae"])),
    (dict(embed_dim=32, grid_size=16), GridSpec((16, 16), 32, **CONVENTIONS["dit"])),
    # base_size defaults to 16: any other grid has its positions scaled by 16 / n
    (dict(embed_dim=32, grid_size=8), GridSpec((8, 8), 32, axis_order=(1, 0), base_size=16)),
    # non-square: grid_size is (H, W), rows y-major, x's block first
    (dict(embed_dim=48, grid_size=(6, 10), base_size=6),
     GridSpec((6, 10), 48, axis_order=(1, 0), base_size=6)),
    (dict(embed_dim=32, grid_size=(12, 20), cls_token=True, extra_tokens=3, interpolation_scale=2.0,
          base_size=8),
     GridSpec((12, 20), 32, axis_order=(1, 0), extra=3, base_size=8, interpolation_scale=2.0)),
    (dict(embed_dim=64, grid_size=24, base_size=64, interpolation_scale=2.0),
     GridSpec((24, 24), 64, **CONVENTIONS["pixart-1024"])),
    # cls_token without extra_tokens (or the reverse) adds no row at all
    (dict(embed_dim=16, grid_size=4, cls_token=True, extra_tokens=0, base_size=4),
     GridSpec((4, 4), 16, axis_order=(1, 0))),
    (dict(embed_dim=16, grid_size=4, cls_token=False, extra_tokens=2, base_size=4),
     GridSpec((4, 4), 16, axis_order=(1, 0))),
]


@pytest.mark.parametrize("kwargs, spec", DIFFUSERS_2D, ids=_name)
def test_diffusers_2d(diffusers_embeddings, kwargs, spec):
    table = diffusers_embeddings.get_2d_sincos_pos_embed(**kwargs, output_type="pt").numpy()
    assert_matches(table, spec)


def test_diffusers_2d_is_not_y_first_nor_row_swapped(diffusers_embeddings):
    table = diffusers_embeddings.get_2d_sincos_pos_embed(32, (6, 10), base_size=6, output_type="pt")
    table = table.numpy()
    assert_differs(table, GridSpec((6, 10), 32, base_size=6))                       # y's block first
    assert_differs(table, GridSpec((10, 6), 32, axis_order=(1, 0), base_size=6))   # (W, H) grid


# (get_3d_sincos_pos_embed's arguments, the spec): spatial_size is (W, H), unlike the 2-D (H, W)
DIFFUSERS_3D = [
    (dict(embed_dim=32, spatial_size=(5, 4), temporal_size=3),
     GridSpec((3, 4, 5), 32, **CONVENTIONS["diffusers-3d"])),
    (dict(embed_dim=64, spatial_size=(8, 6), temporal_size=2, spatial_interpolation_scale=1.875),
     GridSpec((2, 6, 8), 64, **CONVENTIONS["cogvideox"])),
    (dict(embed_dim=48, spatial_size=6, temporal_size=4, spatial_interpolation_scale=0.5,
          temporal_interpolation_scale=2.0),
     GridSpec((4, 6, 6), 48, split=(2, 3, 3), axis_order=(0, 2, 1), interpolation_scale=(2.0, 0.5, 0.5))),
]


@pytest.mark.parametrize("kwargs, spec", DIFFUSERS_3D, ids=_name)
def test_diffusers_3d(diffusers_embeddings, kwargs, spec):
    table = diffusers_embeddings.get_3d_sincos_pos_embed(**kwargs, output_type="pt").numpy()
    assert table.shape == (spec.grid[0], spec.grid[1] * spec.grid[2], spec.d_model)
    assert_matches(table.reshape(-1, spec.d_model), spec)


def test_diffusers_3d_takes_width_first(diffusers_embeddings):
    table = diffusers_embeddings.get_3d_sincos_pos_embed(32, (5, 4), 3, output_type="pt").numpy()
    assert_differs(table.reshape(-1, 32), GridSpec((3, 5, 4), 32, **CONVENTIONS["diffusers-3d"]))


def _detr(module: str, cls: str, features: int, height: int, width: int, **kwargs) -> np.ndarray:
    pytest.importorskip("transformers")
    import importlib

    import torch

    embedding = getattr(importlib.import_module(f"transformers.models.{module}"), cls)(features, **kwargs)
    pos = embedding(torch.Size((1, 3, height, width)), "cpu", torch.float32)   # [1, 2F, H, W]
    return pos[0].permute(1, 2, 0).reshape(height * width, 2 * features).numpy()


@pytest.mark.parametrize("height, width, features", [(10, 15, 32), (7, 7, 64), (1, 6, 8)])
def test_detr_normalized(height, width, features):
    table = _detr("detr.modeling_detr", "DetrSinePositionEmbedding", features, height, width, normalize=True)
    assert_matches(table, GridSpec((height, width), 2 * features, **CONVENTIONS["detr"]))


def test_detr_unnormalized_counts_from_one():
    table = _detr("detr.modeling_detr", "DetrSinePositionEmbedding", 16, 5, 9)
    assert_matches(table, GridSpec((5, 9), 32, layout="interleaved", start=1.0))
    assert_differs(table, GridSpec((5, 9), 32, layout="interleaved"))


def test_deformable_detr_half_pixel():
    table = _detr("deformable_detr.modeling_deformable_detr", "DeformableDetrSinePositionEmbedding",
                  32, 9, 7, normalize=True)
    assert_matches(table, GridSpec((9, 7), 64, **CONVENTIONS["deformable-detr"]))
    assert_differs(table, GridSpec((9, 7), 64, **CONVENTIONS["detr"]))
