"""2-D sincos grids: error vs grid side for a table built in the half dtype, in float32, in float64.

ViT/MAE/DiT tables are small at 14x14 but video and high-resolution models reach hundreds of
positions per axis; a table built in float16 rounds the angle `i * omega_k` to a spacing of
0.125 rad at i = 255, and bfloat16 of 1 rad. Each probe is a whole n x n MAE-style table
(d_model 64, x first); the methods compute each axis's 1-D sin/cos and place them with the
kind's own column plan, then the table is stored in the probe's dtype:

- `half-direct`: positions, frequencies, angles and sin/cos in the half dtype.
- `f32-angles`: everything in float32 (timm's and diffusers' torch code), stored once.
- `f64`: everything in float64 (MAE's NumPy code), stored once.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.grid import plan
from harness.core.kinds.grid.spec import GridSpec
from harness.verbs.precision.study import Study
from harness.verbs.precision.verdicts import Axis
from harness.verbs.precision.common import HALF_DTYPES, Point, numpy64, sweep, tensor

D_MODEL = 64
SIDES = (16, 32, 64, 128, 256)
SIDES_QUICK = (16, 64, 256)


def probe(side: int, dtype: str) -> GridSpec:
    return GridSpec((side, side), D_MODEL, axis_order=(1, 0), dtype=dtype)


def axis_values(spec: GridSpec, axis: int, work: str) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) of one axis computed in `work`, stored in the spec's dtype, as float64."""
    theta = tensor(plan.positions(spec, axis), work)[:, None] * tensor(plan.inv_freq(spec, axis), work)[None]
    store = tensor(np.zeros(0), spec.dtype).dtype
    return numpy64(theta.sin().to(store)), numpy64(theta.cos().to(store))


def table(spec: GridSpec, work: str) -> np.ndarray:
    """The whole table, each axis computed in `work` and placed as the reference places it."""
    out = np.zeros((spec.rows, spec.d_model))
    cells = out[spec.extra:].reshape(*spec.grid, spec.d_model)
    for columns in plan.column_plan(spec):
        sin, cos = axis_values(spec, columns.axis, work)
        first, second = (cos, sin) if spec.cos_first else (sin, cos)
        cells[..., columns.first] = plan.along(spec, columns.axis, first)
        cells[..., columns.second] = plan.along(spec, columns.axis, second)
    return out


def methods(dtype: str) -> dict[str, str]:
    """method -> the dtype it computes in, for a table stored in `dtype`."""
    out = {"f32-angles": "float32", "f64": "float64"}
    return {"half-direct": dtype, **out} if dtype in HALF_DTYPES else out


def measure(sides: tuple[int, ...]) -> list[Point]:
    return sweep("grid", "grid", sides, probe,
                 lambda dtype: {name: (lambda spec, work=work: table(spec, work))
                                for name, work in methods(dtype).items()})


STUDIES = (
    Study("grid", "grid", __name__, SIDES, SIDES_QUICK,
          "2-D sincos grid", Axis("side"), (16, 64, 256),
          f"Largest |error| against the float64 reference over a whole side x side MAE-style "
          f"table (d_model {D_MODEL}, base 10000, x first). Methods: "
          "harness/verbs/precision/grid.py."),
)
