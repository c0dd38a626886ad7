"""The float64 rotary references: the cos/sin cache, and q, k rotated by it.

Plain on purpose: float64 angles, one NumPy cos and sin, an explicit column -> frequency map.
Implementations place their own columns; tests/rotary_oracle.py writes the formulas again in
mpmath and judges this module.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary.spec import RotarySpec


def column_freq(spec: RotarySpec) -> np.ndarray:
    """The frequency index of each of the `rot` cache columns: j % n_freq ("half": cat(f, f)),
    j // 2 ("interleaved": each frequency twice in a row)."""
    j = np.arange(spec.rot)
    return j % spec.n_freq if spec.layout == "half" else j // 2


def positions(spec: RotarySpec) -> np.ndarray:
    return np.arange(spec.offset, spec.offset + spec.length, dtype=np.float64)


def angles(spec: RotarySpec) -> np.ndarray:
    """float64 angles `[length, rot]`, column j at frequency column_freq(spec)[j]."""
    return positions(spec)[:, None] * spec.inv_freq()[column_freq(spec)][None, :]


def cache_reference(spec: RotarySpec) -> np.ndarray:
    """cos and sin stacked, `[2, length, rot]` float64, both times attention_scaling:
    `cos, sin = cache_reference(spec)`."""
    theta = angles(spec)
    scale = spec.attention_scaling
    return np.stack([np.cos(theta) * scale, np.sin(theta) * scale])


def partner(spec: RotarySpec) -> tuple[np.ndarray, np.ndarray]:
    """(the column each rotated column takes its partner from, the sign of that partner):
    out_j = x_j cos_j + sign_j x_partner(j) sin_j."""
    j = np.arange(spec.rot)
    if spec.layout == "half":
        n = spec.n_freq
        return (j + n) % spec.rot, np.where(j < n, -1.0, 1.0)
    return j ^ 1, np.where(j % 2 == 0, -1.0, 1.0)


def rotate(spec: RotarySpec, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x `[..., seq, head_dim]` rotated in float64 by per-row cos, sin `[seq, rot]`; the dims past
    rot pass through."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    cols, sign = partner(spec)
    rotated = x[..., :spec.rot]
    out[..., :spec.rot] = rotated * cos + sign * rotated[..., cols] * sin
    return out


def apply_reference(spec: RotarySpec, q: np.ndarray, k: np.ndarray, position_ids: np.ndarray,
                    cache: np.ndarray | None = None) -> np.ndarray:
    """q and k rotated by the cache rows at `position_ids`, stacked `[2, batch, heads, seq, head_dim]`."""
    cos, sin = cache_reference(spec) if cache is None else cache
    rows = np.asarray(position_ids, dtype=np.int64) - spec.offset
    return np.stack([rotate(spec, q, cos[rows], sin[rows]), rotate(spec, k, cos[rows], sin[rows])])
