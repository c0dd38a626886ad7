"""NumPy grids: MAE's meshgrid + concatenate, and the broadcast design.

`grid-numpy` is MAE's get_2d_sincos_pos_embed generalised (float64 throughout, cast at the
end, as MAE's NumPy code does); `grid-numpy-broadcast` computes only each axis's own table and
broadcast-writes it (impls/grid/_assemble.py).
"""

from __future__ import annotations

from harness import register
from harness.core.kinds.grid import GridSpec
from ._assemble import GridOps, broadcast_table, meshgrid_table, prepare
from harness import GridSupports

NUMPY_DTYPES = GridSupports(dtypes=("float16", "float32", "float64"))


def _ops(spec: GridSpec) -> GridOps:
    import numpy as np

    dtype = np.dtype(spec.dtype)
    return GridOps(
        asarray=lambda a: np.asarray(a, dtype=np.float64),
        meshgrid=lambda arrays: np.meshgrid(*arrays, indexing="ij"),
        outer=lambda a, b: np.multiply.outer(a.reshape(-1), b),
        concat=lambda parts: np.concatenate(parts, axis=-1),
        cat_rows=lambda parts: np.concatenate(parts, axis=0),
        interleave=lambda a, b: np.stack([a, b], axis=-1).reshape(a.shape[0], -1),
        zeros=lambda rows, d: np.zeros((rows, d), dtype=dtype),
        empty=lambda rows, d: np.empty((rows, d), dtype=dtype),
        cast=lambda x: x.astype(dtype),
        sin=np.sin, cos=np.cos,
    )


@register(name="grid-numpy", backend="numpy", workload="grid", supports=NUMPY_DTYPES)
def build_grid_numpy(spec: GridSpec):
    """MAE's way: meshgrid, each axis's 1-D sin/cos of every cell (float64), concatenate, cast."""
    ops = _ops(spec)
    axes = prepare(spec, ops)
    return lambda: meshgrid_table(spec, ops, axes)


@register(name="grid-numpy-broadcast", backend="numpy", workload="grid", supports=NUMPY_DTYPES)
def build_grid_numpy_broadcast(spec: GridSpec):
    """Each axis's table once (h + w rows of sin/cos), broadcast-written into the output."""
    ops = _ops(spec)
    axes = prepare(spec, ops)
    return lambda: broadcast_table(spec, ops, axes)
