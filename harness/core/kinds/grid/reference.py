"""The float64 reference grid table and its angle-scaled tolerance.

Plain on purpose: each axis's angles in float64, NumPy's sin and cos, and the column plan
broadcast over the grid's cells; the extra rows stay exactly zero.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.grid import plan
from harness.core.kinds.grid.spec import GridSpec
from harness.core.kinds.table.tolerance import C_ANGLE, C_FREQ, C_VALUE, eps

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


def tolerance(spec: GridSpec) -> np.ndarray:
    """Per-element allowed |error|: eps * (C_VALUE + |theta| * (C_ANGLE + C_POSITION +
    C_FREQ |ln inv_freq_k|)), as harness/core/kinds/table/tolerance.py argues for the 1-D table."""
    out = np.full((spec.rows, spec.d_model), eps(spec.dtype) * C_VALUE)
    cells = out[spec.extra:].reshape(*spec.grid, spec.d_model)
    for columns in plan.column_plan(spec):
        freqs = plan.inv_freq(spec, columns.axis)
        gain = C_ANGLE + C_POSITION + C_FREQ * np.abs(np.log(freqs))
        slack = np.abs(plan.angles(spec, columns.axis)) * gain[None, :]
        allowed = eps(spec.dtype) * (C_VALUE + plan.along(spec, columns.axis, slack))
        cells[..., columns.first] = allowed
        cells[..., columns.second] = allowed
    return out
