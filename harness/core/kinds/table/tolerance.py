"""The 1-D table's tolerance: the angle contract (harness/core/contract.py) at its own angles.

For column k of angle theta = (p + offset) * scale * inv_freq_k the relative angle error is
C_ANGLE eps (position, frequency, product) plus C_FREQ |ln inv_freq_k| eps (the exponent of
`base ** (-k/D)`, amplified by exp). Implementations that do better (float64 angles, angle
addition) meet the `exact` contract; a wrong convention, a shifted position or angles formed in
a half dtype exceed the `float32` one by orders of magnitude.
"""

from __future__ import annotations

import numpy as np

from harness.core.contract import C_ANGLE, C_FREQ, C_VALUE, EPS, angle_bound, eps  # noqa: F401 (re-exported)
from harness.core.kinds.table.reference import column_plan, inv_freq, positions
from harness.core.kinds.table.spec import Spec


def tolerance(spec: Spec, grade: str = "float32") -> np.ndarray:
    """Per-element allowed absolute error, shape [length, d_model], of the `grade` contract."""
    freqs = inv_freq(spec)
    slope = np.zeros(spec.d_model)          # |theta| per unit position, per column
    gain = np.full(spec.d_model, C_ANGLE)   # relative angle error per column, in eps
    plan = column_plan(spec)
    for cols, k in ((plan.first_cols, plan.first_freq), (plan.second_cols, plan.second_freq)):
        slope[cols] = spec.scale * freqs[k]
        gain[cols] += C_FREQ * np.abs(np.log(freqs[k]))
    theta = np.abs(positions(spec))[:, None] * slope[None, :]
    return angle_bound(spec.dtype, theta, gain[None, :], grade)


def exact_tolerance(spec: Spec) -> np.ndarray:
    """The `exact` contract: a few ulps of the output dtype at every position."""
    return tolerance(spec, "exact")

