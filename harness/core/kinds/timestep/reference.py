"""The float64 timestep embedding every implementation is judged by, and how far one may be off.

The reference is deliberately plain: frequencies and angles in float64, NumPy's sin and cos
(correctly range-reduced), the two blocks written into their columns. tests/timestep_oracle.py
checks it at 50 digits with code it shares nothing with.

The tolerance is the angle contract (harness/core/contract.py): a few ulps of the output dtype
plus the angle's error as if formed in float32 (float64 for `exact`), whatever the output dtype.
Every library computes a half-precision model's embedding in float32 and rounds it once
(diffusers' `.float()`, guided-diffusion's `timesteps.float()`): a timestep rounded to float16
(spacing 0.5 near 1000) or bfloat16 (spacing 4: 999 becomes 1000) is not a rounding error but
another timestep, and must fail.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.kinds.timestep.spec import TimestepSpec
from harness.core.contract import C_ANGLE, C_FREQ, angle_bound, value_bound


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


def tolerance(spec: TimestepSpec, grade: str = "float32") -> np.ndarray:
    """Per-element allowed absolute error `[count, dim]` of the `grade` contract: C_VALUE ulps of
    the output dtype for the rounding of the value, plus |angle| times a few eps of the angle's
    precision (the rounding of t, the frequency and the product), plus |angle| |ln freq_k| eps
    (exp amplifies the rounding of its exponent). The zero column is allowed the value term only."""
    freqs = frequencies(spec)
    gain = C_ANGLE + C_FREQ * np.abs(np.log(freqs))
    allowed = np.full((spec.count, spec.dim), value_bound(spec.dtype, grade))
    bound = angle_bound(spec.dtype, angles(spec), gain[None], grade)
    allowed[:, :spec.half] = bound
    allowed[:, spec.half:2 * spec.half] = bound
    return allowed


def exact_tolerance(spec: TimestepSpec) -> np.ndarray:
    """The `exact` contract: a few ulps of the output dtype at every timestep."""
    return tolerance(spec, "exact")
