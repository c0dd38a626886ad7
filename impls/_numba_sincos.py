"""sin and cos of a float64 angle to float32 accuracy, inlined into Numba loops (registers nothing).

Why: where angles share no additive structure (a timestep embedding's arbitrary t), every
element is a sine or a cosine, so the limit is vector sin/cos throughput (bench's sincos roof:
NumPy's SIMD float32 sin and cos). Float32 argument reduction is what makes model code wrong at
large angles; a float64 sin per element is 2-4x slower. The middle way: reduce in float64, once
for both functions, then short float32 polynomials, so LLVM vectorises the whole loop (no call,
no branch: the quadrant is applied by selects).

    q = rint(x 2/pi),  r = (x - q pi/2_hi) - q pi/2_lo          float64, |r| <= pi/4, error ~1e-16 |x|
    sin r ~ r + r z P(z),  cos r ~ 1 - z/2 + z^2 Q(z),  z = r^2   float32 (Cephes' sinf/cosf minimax)
    quadrant q mod 4 swaps the two and flips their signs

Where the error comes from: the float64 angle and reduction (~1e-16 relative), the rounding of
r to float32 (half an ulp), the polynomials (< 1 ulp on |r| <= pi/4) and one rounding of the
result to the output dtype: a few float32 ulps at any angle below 2^40, where model code's
float32 angle is off by |x| 6e-8.
"""

from __future__ import annotations

import functools
import math
from ._numba_cache import njit as cached_njit

TWO_OVER_PI = 2.0 / math.pi
PI_OVER_2_HI = 1.5707963267948966          # float64(pi/2)
PI_OVER_2_LO = 6.123233995736766e-17       # pi/2 - PI_OVER_2_HI
#: Cephes sinf / cosf on |r| <= pi/4 (float32 minimax)
SIN = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
COS = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)


@functools.cache
def sincos():
    """The inlined `sincos(x) -> (sin x, cos x)` as float32, x float64 (numba imported here)."""
    import numpy as np

    s1, s2, s3 = (np.float32(c) for c in SIN)
    c1, c2, c3 = (np.float32(c) for c in COS)
    half, one = np.float32(0.5), np.float32(1.0)

    @cached_njit(inline="always", fastmath={"contract"})
    def sincos32(x):
        q = np.rint(x * TWO_OVER_PI)
        r = np.float32((x - q * PI_OVER_2_HI) - q * PI_OVER_2_LO)
        z = r * r
        s = r + r * z * (s1 + z * (s2 + z * s3))
        c = one - half * z + z * z * (c1 + z * (c2 + z * c3))
        # q mod 4 in float64, then a 32-bit conversion: AVX2 has a packed float64 -> int32
        # conversion and none to int64, which left the loop's quadrant scalar (grid axis
        # tables 2.2 -> 1.7 ns a pair, one thread); exact for |q| < 2^53, the same bits
        m = np.int32(q - 4.0 * np.floor(q * 0.25))
        sin_x = c if m & 1 else s
        cos_x = s if m & 1 else c
        sin_x = -sin_x if m & 2 else sin_x
        cos_x = -cos_x if (m + 1) & 2 else cos_x
        return sin_x, cos_x

    return sincos32
