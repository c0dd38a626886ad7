"""The float64 reference grid table and its angle-scaled tolerance.

Plain on purpose: each axis's angles in float64, NumPy's sin and cos, and the column plan
broadcast over the grid's cells; the extra rows stay exactly zero.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.grid import plan
from harness.core.kinds.grid.spec import GridSpec
from harness.core.contract import C_ANGLE, C_FREQ, angle_bound, value_bound

#: Computing a position ((i + start), a division by n or by a scale, 2 pi) rounds a few more
#: times than the 1-D table's integer position: a few eps of relative angle error more.
C_POSITION = 4.0


def reference(spec: GridSpec) -> np.ndarray:
    """The float64 table `[extra + prod(grid), d_model]` every implementation is judged by."""
    first, second = (np.cos, np.sin) if spec.cos_first else (np.sin, np.cos)
    out = np.zeros((spec.rows, spec.d_model), dtype=np.float64)
    cells = out[spec.extra:].reshape(*spec.grid, spec.d_model)
    for columns in plan.column_plan(spec):
        theta = plan.angles(spec, columns.axis)
        cells[..., columns.first] = plan.along(spec, columns.axis, first(theta))
        cells[..., columns.second] = plan.along(spec, columns.axis, second(theta))
    return out


def tolerance(spec: GridSpec, grade: str = "float32") -> np.ndarray:
    """Per-element allowed |error| of the `grade` contract (harness/core/contract.py): C_VALUE
    ulps of the output dtype + the angle's error as if formed in that grade's precision, with a
    relative angle error of C_ANGLE + C_POSITION + C_FREQ |ln inv_freq_k| eps. The extra rows
    are zeros: C_VALUE ulps."""
    out = np.full((spec.rows, spec.d_model), value_bound(spec.dtype, grade))
    cells = out[spec.extra:].reshape(*spec.grid, spec.d_model)
    for columns in plan.column_plan(spec):
        freqs = plan.inv_freq(spec, columns.axis)
        gain = C_ANGLE + C_POSITION + C_FREQ * np.abs(np.log(freqs))
        bound = angle_bound(spec.dtype, plan.angles(spec, columns.axis), gain[None, :], grade)
        allowed = plan.along(spec, columns.axis, bound)
        cells[..., columns.first] = allowed
        cells[..., columns.second] = allowed
    return out


def exact_tolerance(spec: GridSpec) -> np.ndarray:
    """The `exact` contract: a few ulps of the output dtype everywhere."""
    return tolerance(spec, "exact")
