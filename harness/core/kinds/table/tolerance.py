"""How far from the float64 reference an honest implementation may be.

A fixed atol either hides bugs at small positions or flags honest rounding at
large ones, so the bound scales with each element's angle. For an element of
angle theta at frequency k, computed directly in a dtype of machine epsilon eps:

    tol = eps * (C_VALUE + |theta| * (C_ANGLE + C_FREQ * |ln inv_freq_k|))

- `C_VALUE` ulps of 1.0 cover rounding the result and the libm's sin/cos.
- `|theta| * C_ANGLE` covers rounding position, frequency and product: the
  angle carries a relative error of a few eps, which sin turns into an
  absolute error of |theta| times that.
- `|theta| * 2 |ln inv_freq_k|` covers the frequency itself: `base ** (-k/D)`
  or `exp(-k ln(base) / D)` round the exponent (once or twice), and exp
  amplifies that to a relative error of |ln inv_freq_k| * eps per rounding.

Implementations that do better (float64 angles, angle addition) pass easily;
a wrong convention, a shifted position or float16 angles in a float32 table
exceed it by orders of magnitude.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.table.reference import column_plan, inv_freq, positions
from harness.core.kinds.table.spec import Spec

C_VALUE = 4.0
C_ANGLE = 4.0
C_FREQ = 2.0

EPS = {
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": 2.0**-7,
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}


def eps(dtype: str) -> float:
    return EPS[dtype]


def tolerance(spec: Spec) -> np.ndarray:
    """Per-element allowed absolute error, shape [length, d_model]."""
    freqs = inv_freq(spec)
    slope = np.zeros(spec.d_model)          # |theta| per unit position, per column
    gain = np.full(spec.d_model, C_ANGLE)   # relative angle error per column, in eps
    plan = column_plan(spec)
    for cols, k in ((plan.first_cols, plan.first_freq), (plan.second_cols, plan.second_freq)):
        slope[cols] = spec.scale * freqs[k]
        gain[cols] += C_FREQ * np.abs(np.log(freqs[k]))
    theta = np.abs(positions(spec))[:, None] * slope[None, :]
    return eps(spec.dtype) * (C_VALUE + theta * gain[None, :])

