"""NumPy timestep embeddings: diffusers' formula as written, and an accurate one-output design.

`timestep-numpy-diffusers` follows diffusers' `get_timestep_embedding` step by step in float32
(float64 for float64 output): its angle `t * exp(exponent)` carries a relative error of a few
float32 eps, which at t near 1000 is ~1e-4 absolute, ~1000x the output's rounding.
`timestep-numpy` forms the angles in float64 from frequencies computed once, reduces them to
[-pi, pi] in float64, and only then rounds to float32 for sin and cos, written straight into
their columns of one output array: its error stays ~2e-7 whatever the timestep, and it makes no
concatenated copies.
"""

from __future__ import annotations

import math

import numpy as np

from harness import TimestepSupports, register
from harness.core.kinds.timestep import TimestepSpec

from ._common import blocks, frequencies, scaled_timesteps

#: NumPy has no bfloat16 of its own.
NUMPY_DTYPES = TimestepSupports(dtypes=("float16", "float32", "float64"))
TWO_PI = 2.0 * math.pi


def _work_dtype(spec: TimestepSpec) -> type:
    """float64 for float64 output, float32 for the rest (diffusers' `.float()`)."""
    return np.float64 if spec.dtype == "float64" else np.float32


@register(name="timestep-numpy-diffusers", backend="numpy", workload="timestep", supports=NUMPY_DTYPES)
def build_numpy_diffusers(spec: TimestepSpec):
    """diffusers' get_timestep_embedding in NumPy: float32 exponent, exp, multiply, cat, flip, pad."""
    work = _work_dtype(spec)
    timesteps = np.asarray(spec.timesteps, dtype=work)
    half, dim, out_dtype = spec.half, spec.dim, np.dtype(spec.dtype)
    log_period, shift, scale, flip = math.log(spec.max_period), spec.freq_shift, spec.scale, spec.cos_first

    def embed():
        exponent = -log_period * np.arange(half, dtype=work)
        exponent = exponent / work(half - shift)
        emb = timesteps[:, None] * np.exp(exponent)[None, :]
        emb = work(scale) * emb
        emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)
        if flip:
            emb = np.concatenate([emb[:, half:], emb[:, :half]], axis=-1)
        if dim % 2:
            emb = np.pad(emb, ((0, 0), (0, 1)))
        return emb.astype(out_dtype)

    return embed


@register(name="timestep-numpy", backend="numpy", workload="timestep", supports=NUMPY_DTYPES)
def build_numpy(spec: TimestepSpec):
    """float64 angles reduced to [-pi, pi], then sin/cos in the work dtype into one output."""
    work = _work_dtype(spec)
    freqs, scaled = frequencies(spec), scaled_timesteps(spec)
    dim, out_dtype = spec.dim, np.dtype(spec.dtype)
    first, second = blocks(spec)   # where sin, then cos, go

    def embed():
        out = np.empty((len(scaled), dim), dtype=out_dtype)
        theta = np.multiply.outer(scaled, freqs)
        if work is np.float32:
            theta -= TWO_PI * np.rint(theta * (1.0 / TWO_PI))
            theta = theta.astype(np.float32)
        np.sin(theta, out=out[:, first])
        np.cos(theta, out=out[:, second])
        if dim % 2:
            out[:, -1] = 0
        return out

    return embed
