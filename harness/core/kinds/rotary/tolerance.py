"""How far from the float64 references an honest rotary implementation may be.

The angle contract (harness/core/contract.py) at the cache's angles: a few ulps of the output
dtype, plus the angle's error as if formed in float32 (or float64, for `exact`), whatever dtype
the cache is stored in. The frequency (`base ** (-2k/dim)`) adds |ln inv_freq| eps per rounding,
a scaled rope_type a few eps more for its extra operations, and everything is multiplied by the
attention scaling that multiplies cos and sin. A position, an angle or an inv_freq held in a half
dtype is not a rounding but another position, and fails.

For apply, out_j = x_j c_j +- x_p s_j: the cache's error reaches the output weighted by |x|, and
the products and the sum are rounded in the output dtype, as model code does; the dims past
rotary_dim must come back untouched (q and k are exactly representable in the dtype).
"""

from __future__ import annotations

import numpy as np

from harness.core.contract import C_ANGLE, C_FREQ, angle_bound, eps
from harness.core.kinds.rotary.reference import (cache_rows, check_position_ids, column_freq,
                                                 heads_first, partner, positions, stacked)
from harness.core.kinds.rotary.spec import RotarySpec

#: Extra relative angle error, in eps, of a scaled rope_type's blend, smoothing or base rescale.
C_SCALED = 4.0
#: Roundings of an apply's two products and one sum, in eps of the magnitudes they round.
C_APPLY = 2.0


def cache_tolerance(spec: RotarySpec, grade: str = "float32") -> np.ndarray:
    """Per-element allowed |error| of the cache, `[2, length, rot]` (the same for cos and sin)."""
    freqs = spec.inv_freq()[column_freq(spec)]
    gain = C_ANGLE + C_FREQ * np.abs(np.log(freqs)) + (C_SCALED if spec.rope_type != "default" else 0.0)
    theta = positions(spec)[:, None] * freqs[None, :]
    tol = spec.attention_scaling * angle_bound(spec.dtype, theta, gain[None, :], grade)
    return np.stack([tol, tol])


def exact_cache_tolerance(spec: RotarySpec) -> np.ndarray:
    """The `exact` contract of the cache: a few ulps of the output dtype at every position."""
    return cache_tolerance(spec, "exact")


def apply_tolerance(spec: RotarySpec, q: np.ndarray, k: np.ndarray, position_ids: np.ndarray,
                    cache: np.ndarray, cache_tol: np.ndarray) -> np.ndarray:
    """Per-element allowed |error| of q and k rotated, in apply's canonical stacked form
    `[2, batch, q_heads, seq, head_dim]` (reference.stacked)."""
    check_position_ids(spec, q, position_ids)
    cos, sin = (np.abs(cache_rows(spec, part, position_ids)) for part in cache)
    tol_cos, tol_sin = (cache_rows(spec, part, position_ids) for part in cache_tol)
    cols, _ = partner(spec)
    unit = eps(spec.dtype)
    out = []
    for x in (q, k):
        ax = np.abs(heads_first(spec, np.asarray(x, dtype=np.float64)))
        allowed = np.zeros_like(ax)      # dims past rot pass through untouched
        own, other = ax[..., :spec.rot], ax[..., :spec.rot][..., cols]
        allowed[..., :spec.rot] = (own * tol_cos + other * tol_sin
                                   + C_APPLY * unit * (own * cos + other * sin))
        out.append(np.maximum(allowed, np.finfo(np.float64).tiny))   # never 0/0 in the ratio
    return stacked(*out)
