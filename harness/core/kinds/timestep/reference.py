"""The float64 timestep embedding every implementation is judged by, and how far one may be off.

The reference is deliberately plain: frequencies and angles in float64, NumPy's sin and cos
(correctly range-reduced), the two blocks written into their columns. tests/timestep_oracle.py
checks it at 50 digits with code it shares nothing with.

The tolerance is the 1-D table's (harness.core.kinds.table.tolerance), with one difference: the angle
term uses the eps of the precision the angle is computed in, which for float16 and bfloat16
output is float32. Every library computes a half-precision model's embedding in float32 and
rounds it once (diffusers' `.float()`, guided-diffusion's `timesteps.float()`): a timestep
rounded to float16 (spacing 0.5 near 1000) or bfloat16 (spacing 4) is not a rounding error
but another timestep, and must fail.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.kinds.timestep.spec import TimestepSpec
from harness.core.kinds.table.tolerance import C_ANGLE, C_FREQ, C_VALUE, eps

#: The precision a half-precision embedding's angles are computed in.
HALF_DTYPES = ("float16", "bfloat16")


def frequencies(spec: TimestepSpec) -> np.ndarray:
    """float64 `exp(-ln(max_period) * k / (half - freq_shift))`, k = 0 .. half-1."""
    k = np.arange(spec.half, dtype=np.float64)
    return np.exp(-math.log(spec.max_period) * k / spec.denominator)


def angles(spec: TimestepSpec) -> np.ndarray:
    """float64 angles `scale * t * freq_k`, shape [count, half]."""
    return (spec.scale * np.asarray(spec.timesteps, dtype=np.float64))[:, None] * frequencies(spec)[None]


def reference(spec: TimestepSpec) -> np.ndarray:
    """The float64 embedding `[count, dim]`: first block, second block, a zero column if odd."""
    theta = angles(spec)
    first, second = (np.cos, np.sin) if spec.cos_first else (np.sin, np.cos)
    out = np.zeros((spec.count, spec.dim), dtype=np.float64)
    out[:, :spec.half] = first(theta)
    out[:, spec.half:2 * spec.half] = second(theta)
    return out


def angle_eps(dtype: str) -> float:
    """eps of the precision the angles are computed in: float32 for the half dtypes."""
    return eps("float32") if dtype in HALF_DTYPES else eps(dtype)


def tolerance(spec: TimestepSpec) -> np.ndarray:
    """Per-element allowed absolute error `[count, dim]`: a few ulps of the output dtype for the
    rounding of the value, plus |angle| times a few eps of the angle's precision (the rounding
    of t, the frequency and the product), plus |angle| |ln freq_k| eps (exp amplifies the
    rounding of its exponent). The zero column is allowed the value term only."""
    freqs = frequencies(spec)
    gain = C_ANGLE + C_FREQ * np.abs(np.log(freqs))
    theta = np.abs(angles(spec))
    allowed = np.full((spec.count, spec.dim), eps(spec.dtype) * C_VALUE)
    angle_term = angle_eps(spec.dtype) * theta * gain[None]
    allowed[:, :spec.half] += angle_term
    allowed[:, spec.half:2 * spec.half] += angle_term
    return allowed
