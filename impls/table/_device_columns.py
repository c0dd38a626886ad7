"""Per-column frequency and phase for the GPU kernels: one kernel serves every convention.

Column c of any table in the family is `sin((p + offset) * f_c + s_c)` with a
float64 frequency `f_c = scale * base ** (-k / denominator)` and a phase
`s_c` of 0 (sin) or pi/2 (cos); a zero-padded column has f = s = 0. So a
kernel never branches on the layout: it reads f and s for its columns. Worked
out here from the Spec on its own (not from the reference's column plan), so a
placement mistake here is caught by verify rather than shared with it.

Why it is accurate: the angle is formed and reduced modulo 2 pi in float64
(error ~1e-12 at any position up to 2**40), and only the reduced angle
(|r| < 3 pi / 2) is rounded to float32 for the sine: verify measured 2.0e-7 on an
H100 at a million positions, where the float32-angle variants are off by 2.2e-2
(results/20261123-063516-c16a9a1/verify.md).
"""

from __future__ import annotations

import math

import numpy as np

from harness import Spec

SIN, COS = 0.0, math.pi / 2


def frequencies_and_phases(spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    """(f, s), each float64 of length d_model."""
    h = spec.d_model // 2
    k = np.arange(spec.n_freq, dtype=np.float64)
    freq = spec.scale * spec.base ** (-k / spec.denominator)
    first, second = (COS, SIN) if spec.cos_first else (SIN, COS)
    f = np.zeros(spec.d_model)
    s = np.zeros(spec.d_model)
    if spec.layout == "interleaved":
        f[0:2 * h:2], s[0:2 * h:2] = freq[:h], first
        f[1:2 * h:2], s[1:2 * h:2] = freq[:h], second
        if spec.n_freq > h:                       # 'extend': one more column of the first kind
            f[2 * h], s[2 * h] = freq[h], first
    else:
        n = spec.n_freq
        f[:n], s[:n] = freq, first
        f[n:n + h], s[n:n + h] = freq[:h], second
    return f, s                                   # 'pad': the last column stays f = s = 0
