"""How far from the float64 references an honest rotary implementation may be.

Like the 1-D table's (harness/core/tolerance.py), the bound grows with each element's angle:
an angle computed in a dtype of epsilon eps carries a relative error of a few eps (position,
frequency, product), which cos and sin turn into an absolute error of |theta| times that; the
frequency itself (`base ** (-2k/dim)`) adds |ln inv_freq| eps per rounding, and a scaled
rope_type a few eps more for its extra operations. Everything is multiplied by the
attention scaling that multiplies cos and sin.

For apply, out_j = x_j c_j +- x_p s_j: the cache's error reaches the output weighted by |x|,
and the products and the sum are rounded in the output dtype.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary.reference import column_freq, partner, positions
from harness.core.kinds.rotary.spec import RotarySpec
from harness.core.kinds.table.tolerance import C_ANGLE, C_FREQ, C_VALUE, eps

#: Extra relative angle error, in eps, of a scaled rope_type's blend, smoothing or base rescale.
C_SCALED = 4.0
#: Roundings of an apply's two products and one sum, in eps of the magnitudes they round.
C_APPLY = 2.0


def cache_tolerance(spec: RotarySpec) -> np.ndarray:
    """Per-element allowed |error| of the cache, `[2, length, rot]` (the same for cos and sin)."""
    freqs = spec.inv_freq()[column_freq(spec)]
    gain = C_ANGLE + C_FREQ * np.abs(np.log(freqs)) + (C_SCALED if spec.rope_type != "default" else 0.0)
    theta = positions(spec)[:, None] * freqs[None, :]
    tol = spec.attention_scaling * eps(spec.dtype) * (C_VALUE + theta * gain[None, :])
    return np.stack([tol, tol])


def apply_tolerance(spec: RotarySpec, q: np.ndarray, k: np.ndarray, position_ids: np.ndarray,
                    cache: np.ndarray, cache_tol: np.ndarray) -> np.ndarray:
    """Per-element allowed |error| of q and k rotated, `[2, batch, heads, seq, head_dim]`."""
    rows = np.asarray(position_ids, dtype=np.int64) - spec.offset
    cos, sin = np.abs(cache[0][rows]), np.abs(cache[1][rows])
    tol_cos, tol_sin = cache_tol[0][rows], cache_tol[1][rows]
    cols, _ = partner(spec)
    unit = eps(spec.dtype)
    out = []
    for x in (q, k):
        ax = np.abs(np.asarray(x, dtype=np.float64))
        allowed = unit * ax        # dims past rot pass through: at most a rounding
        own, other = ax[..., :spec.rot], ax[..., :spec.rot][..., cols]
        allowed[..., :spec.rot] = (own * tol_cos + other * tol_sin
                                   + C_APPLY * unit * (own * cos + other * sin))
        out.append(np.maximum(allowed, np.finfo(np.float64).tiny))   # never 0/0 in the ratio
    return np.stack(out)
