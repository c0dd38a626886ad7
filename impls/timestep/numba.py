"""Numba timestep embedding: one parallel pass, sin and cos from one shared range reduction.

Why it is fast: a timestep's angles `scale * t * freq_k` share no additive structure (the
frequencies are geometric and the timesteps arbitrary), so angle addition does not apply; the
cost is one sin and one cos per pair. For float32 output both come from one reduction in
float64 (x = q pi/2 + r, |r| <= pi/4) and two short polynomials in r, with no libm call, so
the inner loop over frequencies has no call and no branch (the quadrant picks by select) and
LLVM can vectorize it; rows go to threads (`prange`), each written once into the output.

Where the error comes from: the float64 angle and reduction are exact to ~|x| 1e-16; the
Taylor polynomials (degree 9 for sin, 10 for cos) are off by < 2e-9 on |r| <= pi/4; then one
rounding to float32. So the error is ~0.5 ulp at any timestep, where diffusers' float32 angle
is off by |x| ~6e-8. Float64 output calls libm's sin and cos on the float64 angle instead.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from harness import register
from harness.core.kinds.timestep import TimestepSpec
from harness import TimestepSupports

FASTMATH = {"contract"}   # fuse a*b + c into an FMA; no reassociation, no unsafe math
TWO_OVER_PI = 2.0 / math.pi
PI_OVER_2_HI = 1.5707963267948966          # float64(pi/2)
PI_OVER_2_LO = 6.123233995736766e-17       # pi/2 - PI_OVER_2_HI


@functools.cache
def _jit() -> SimpleNamespace:
    """Compile the kernels once per process (numba is imported only here)."""
    import numba

    njit = functools.partial(numba.njit, fastmath=FASTMATH, cache=False)

    @njit(inline="always")
    def sincos(x):
        """(sin x, cos x) for float64 x: reduce by pi/2 in float64, Taylor in r, quadrant select."""
        q = math.floor(x * TWO_OVER_PI + 0.5)
        r = (x - q * PI_OVER_2_HI) - q * PI_OVER_2_LO
        r2 = r * r
        s = r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880))))
        c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320
                                                                       + r2 * (-1.0 / 3628800)))))
        m = q - 4.0 * math.floor(q * 0.25)             # quadrant 0 .. 3
        odd = m == 1.0 or m == 3.0
        sin_x = c if odd else s
        cos_x = s if odd else c
        sin_x = -sin_x if m >= 2.0 else sin_x
        cos_x = -cos_x if (m == 1.0 or m == 2.0) else cos_x
        return sin_x, cos_x

    @njit(parallel=True)
    def reduced(out, scaled, freqs, sin_at, cos_at):
        half, dim = freqs.size, out.shape[1]
        for i in numba.prange(scaled.size):
            a = scaled[i]
            for k in range(half):
                s, c = sincos(a * freqs[k])
                out[i, sin_at + k] = s
                out[i, cos_at + k] = c
            if dim % 2:
                out[i, dim - 1] = 0

    @njit(parallel=True)
    def libm(out, scaled, freqs, sin_at, cos_at):
        half, dim = freqs.size, out.shape[1]
        for i in numba.prange(scaled.size):
            a = scaled[i]
            for k in range(half):
                x = a * freqs[k]
                out[i, sin_at + k] = math.sin(x)
                out[i, cos_at + k] = math.cos(x)
            if dim % 2:
                out[i, dim - 1] = 0

    return SimpleNamespace(reduced=reduced, libm=libm)


@register(name="timestep-numba", backend="numba", workload="timestep",
          supports=TimestepSupports(dtypes=("float32", "float64")))
def build_numba(spec: TimestepSpec):
    """Parallel rows; float32: one float64 reduction and two polynomials per pair; float64: libm."""
    kernels = _jit()
    kernel = kernels.libm if spec.dtype == "float64" else kernels.reduced
    k = np.arange(spec.half, dtype=np.float64)
    freqs = np.exp(-math.log(spec.max_period) * k / (spec.half - spec.freq_shift))
    scaled = spec.scale * np.asarray(spec.timesteps, dtype=np.float64)
    sin_at, cos_at = (spec.half, 0) if spec.cos_first else (0, spec.half)
    shape, dtype = (spec.count, spec.dim), np.dtype(spec.dtype)
    kernel(np.empty((1, spec.dim), dtype), scaled[:1], freqs, sin_at, cos_at)   # compile now

    def embed():
        out = np.empty(shape, dtype)
        kernel(out, scaled, freqs, sin_at, cos_at)
        return out

    return embed
