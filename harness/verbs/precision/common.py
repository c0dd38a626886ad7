"""What the kinds' precision studies share: the row they produce and the few torch steps.

Every method is a small torch version of one way real code computes a kind (torch on the CPU
because NumPy has no bfloat16); the truth is always the kind's own float64 reference
(`harness.core.kinds.reference`), so a study measures the method, never itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from harness.core import kinds

TWO_PI = 2.0 * math.pi
HALF_DTYPES = ("float16", "bfloat16")
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Point:
    """Largest |error| of one method over one probe (a window of positions, timesteps or a grid)."""

    kind: str            # "rotary", "timestep", "grid"
    study: str           # the panel it belongs to: "cache", "rope_type", "apply", "embedding", "grid"
    source: str          # what the row is called in tables and plots
    method: str
    dtype: str           # the dtype the result is stored in
    position: float      # the probe's first position (timestep; grid side)
    max_abs_err: float   # inf when the result held Inf/NaN
    backend: str = "torch"


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def tensor(x: np.ndarray, dtype: str):
    """float64 NumPy values rounded once to `dtype` (round to nearest) as a torch tensor."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64)).to(torch_dtype(dtype))


def numpy64(t) -> np.ndarray:
    return t.double().numpy()


def reduced(theta: np.ndarray) -> np.ndarray:
    """float64 angles reduced to [-pi, pi): what stays small enough to round well in float32."""
    return np.mod(theta + math.pi, TWO_PI) - math.pi


def max_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max()) if np.isfinite(got).all() else math.inf


def sweep(kind: str, study: str, probes: Iterable[float], probe: Callable[[Any, str], Any],
          methods: Callable[[str], dict[str, Callable[[Any], np.ndarray]]]) -> list[Point]:
    """Every method's largest error against the kind's float64 reference, at every probe in every
    dtype (`probe(at, dtype)` is the spec; `methods(dtype)`: name -> spec -> the result)."""
    points = []
    for at in probes:
        for dtype in DTYPES:
            spec = probe(at, dtype)
            ref = kinds.reference(spec)
            for name, method in methods(dtype).items():
                with np.errstate(all="ignore"):
                    err = max_error(method(spec), ref)
                points.append(Point(kind, study, f"{name} {dtype}", name, dtype, at, err))
    return points


def log_starts(last: int, per_octave: int) -> list[int]:
    """0 and round(2 ** (i / per_octave)) up to `last`: every power of two is a probe, so the
    exact-integer limits of the half dtypes (256, 2048) fall on probe edges."""
    octaves = int(round(math.log2(last)))
    return sorted({0, *(int(round(2 ** (i / per_octave))) for i in range(octaves * per_octave + 1))})


def single_thread() -> None:
    """The probes are tiny: one torch thread per child leaves the other core to the other child."""
    import torch

    torch.set_num_threads(1)
