"""What the timestep backends share (registers nothing): the float64 frequencies and scaled
timesteps, and where the sin and cos blocks go, written once so a mistake shows everywhere."""

from __future__ import annotations

import math

import numpy as np

from harness import TimestepSpec


def frequencies(spec: TimestepSpec) -> np.ndarray:
    """float64 `exp(-ln(max_period) k / (half - freq_shift))`, k = 0 .. half-1."""
    k = np.arange(spec.half, dtype=np.float64)
    return np.exp(-math.log(spec.max_period) * k / (spec.half - spec.freq_shift))


def scaled_timesteps(spec: TimestepSpec) -> np.ndarray:
    """float64 `scale * t` for every timestep."""
    return spec.scale * np.asarray(spec.timesteps, dtype=np.float64)


def blocks(spec: TimestepSpec) -> tuple[slice, slice]:
    """The columns of the sin block and of the cos block (cos first with `cos_first`)."""
    low, high = slice(0, spec.half), slice(spec.half, 2 * spec.half)
    return (high, low) if spec.cos_first else (low, high)
