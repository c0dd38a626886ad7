"""Diffusion timestep embeddings: error vs timestep for each precision of exponent and angle.

diffusers' `get_timestep_embedding` computes the exponent `-ln(max_period) k / (half - shift)`,
its exp, and the angle `t * freq` in float32 and casts the embedding to the model's dtype. A
half-precision model that lets the exponent or the angles run in its own dtype gets another
timestep: float16 holds t = 999 exactly but rounds 999 * freq to a spacing of 0.5 rad, and
bfloat16 cannot even hold t = 999 (spacing 4). Each probe is 8 timesteps t0 + j/8 (the integer
DDPM step and 7 fractional ones of a continuous-time sampler) of a Stable Diffusion embedding
(dim 320, freq_shift 0, cos first); the methods, each stored in the probe's dtype:

- `f32` (diffusers): exponent, exp and angle in float32.
- `half-exponent`: exponent and exp in the half dtype, t and the angle in float32.
- `half-angles`: exponent in float32, t, the angle and sin/cos in the half dtype.
- `all-half`: everything in the half dtype.
- `f64-reduced`: float64 angles reduced mod 2 pi, one float32 sin/cos.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.kinds.timestep.reference import angles
from harness.core.kinds.timestep.spec import TimestepSpec
from harness.verbs.precision.study import Study
from harness.verbs.precision.verdicts import Axis
from harness.verbs.precision.common import HALF_DTYPES, Point, numpy64, reduced, sweep, tensor, torch_dtype

DIM = 320
WINDOW = 8
STARTS = (0, 1, 2, 4, 8, 16, 32, 64, 100, 128, 200, 256, 400, 512, 600, 800, 900, 999)
STARTS_QUICK = (0, 1, 16, 64, 256, 512, 999)


def probe(t0: float, dtype: str = "float32") -> TimestepSpec:
    return TimestepSpec(tuple(t0 + j / WINDOW for j in range(WINDOW)), DIM, freq_shift=0.0,
                        cos_first=True, dtype=dtype)


def embedding(spec: TimestepSpec, exponent_dtype: str, angle_dtype: str) -> np.ndarray:
    """diffusers' steps with the exponent (and exp) in one dtype and t, the angle and sin/cos in
    another, the result stored in the spec's dtype (as float64)."""
    import torch

    k = tensor(np.arange(spec.half, dtype=np.float64), exponent_dtype)
    freq = torch.exp(-math.log(spec.max_period) * k / spec.denominator)
    theta = tensor(np.asarray(spec.timesteps), angle_dtype)[:, None] * freq.to(torch_dtype(angle_dtype))[None]
    return _store(theta.cos(), theta.sin(), spec.dtype)


def f64_reduced(spec: TimestepSpec) -> np.ndarray:
    theta = tensor(reduced(angles(spec)), "float32")
    return _store(theta.cos(), theta.sin(), spec.dtype)


def _store(cos, sin, dtype: str) -> np.ndarray:
    """cos block then sin block (cos_first), rounded once to `dtype`."""
    import torch

    return numpy64(torch.cat([cos, sin], dim=-1).to(torch_dtype(dtype)))


def methods(dtype: str) -> dict:
    """name -> spec -> embedding, for an embedding stored in `dtype`."""
    out = {"f32": lambda s: embedding(s, "float32", "float32"), "f64-reduced": f64_reduced}
    if dtype in HALF_DTYPES:
        out.update({"half-exponent": lambda s: embedding(s, dtype, "float32"),
                    "half-angles": lambda s: embedding(s, "float32", dtype),
                    "all-half": lambda s: embedding(s, dtype, dtype)})
    return out


def measure(starts: tuple[float, ...]) -> list[Point]:
    return sweep("timestep", "embedding", starts, probe, methods)


STUDIES = (
    Study("timestep", "embedding", __name__, STARTS, STARTS_QUICK,
          "Timestep embedding", Axis("t", (WINDOW - 1) / WINDOW), (0, 64, 256, 999),
          f"Largest |error| against the float64 reference over the timesteps t0 + j/"
          f"{WINDOW}, j < {WINDOW} (a DDPM step and fractional ones), of a "
          f"Stable Diffusion embedding (dim {DIM}, max_period 10000, freq_shift 0, cos "
          "first); dtype is the dtype the embedding is stored in. Methods: "
          "harness/verbs/precision/timestep.py."),
)
