"""The float64 rotary references: the cos/sin cache, and q, k rotated by it.

Plain on purpose: float64 angles, one NumPy cos and sin, an explicit column -> frequency map.
Implementations place their own columns; tests/rotary_oracle.py writes the formulas again in
mpmath and judges this module.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary.spec import RotarySpec
from harness.util.exitcodes import UsageError


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
    """x `[batch, heads, seq, head_dim]` rotated in float64 by cos, sin `[seq, rot]` (or
    `[batch, 1, seq, rot]`, one row per sequence); the dims past rot pass through."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    cols, sign = partner(spec)
    rotated = x[..., :spec.rot]
    out[..., :spec.rot] = rotated * cos + sign * rotated[..., cols] * sin
    return out


def heads_first(spec: RotarySpec, x: np.ndarray) -> np.ndarray:
    """q or k as `[batch, heads, seq, head_dim]` from the spec's qk_layout (a view)."""
    x = np.asarray(x)
    return np.swapaxes(x, 1, 2) if spec.qk_layout == "bshd" else x


def cache_rows(spec: RotarySpec, table: np.ndarray, position_ids: np.ndarray) -> np.ndarray:
    """The rows of one cache table at the position ids, shaped to broadcast over heads-first q:
    `[seq, rot]` for `[seq]` ids, `[batch, 1, seq, rot]` for `[batch, seq]`."""
    rows = table[np.asarray(position_ids, dtype=np.int64) - spec.offset]
    return rows[:, None] if rows.ndim == 3 else rows


def canonical(spec: RotarySpec, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """q and k (in the spec's qk_layout) in the form the apply workload is compared in, whatever
    form they were handed over in: `stacked(heads_first(q), heads_first(k))`."""
    return stacked(heads_first(spec, q), heads_first(spec, k))


def stacked(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Heads-first q and k, k's heads repeated to q's (each k head serves q_heads / kv_heads
    consecutive q heads), stacked `[2, batch, q_heads, seq, head_dim]`."""
    ratio = q.shape[1] // k.shape[1]
    return np.stack([q, k if ratio == 1 else np.repeat(k, ratio, axis=1)])   # no copy of k for 1


def apply_reference(spec: RotarySpec, q: np.ndarray, k: np.ndarray, position_ids: np.ndarray,
                    cache: np.ndarray | None = None) -> np.ndarray:
    """q and k rotated by the cache rows at `position_ids`, in the canonical stacked form
    `[2, batch, q_heads, seq, head_dim]` (`canonical`). q and k are in the spec's qk_layout;
    position ids are `[seq]` or `[batch, seq]` integers (refused otherwise, naming the shape)."""
    check_position_ids(spec, q, position_ids)
    cos, sin = cache_reference(spec) if cache is None else cache
    cos, sin = cache_rows(spec, cos, position_ids), cache_rows(spec, sin, position_ids)
    return stacked(rotate(spec, heads_first(spec, q), cos, sin),
                   rotate(spec, heads_first(spec, k), cos, sin))


def check_position_ids(spec: RotarySpec, q: np.ndarray, position_ids: np.ndarray) -> None:
    """ValueError unless the position ids are integers `[seq]` (or `[batch, seq]` where the spec's
    position_ids is "batch") within offset .. offset + length - 1."""
    batch, _, seq, _ = heads_first(spec, q).shape
    want = (batch, seq) if spec.position_ids == "batch" else (seq,)
    ids = np.asarray(position_ids)
    if ids.shape != want or not np.issubdtype(ids.dtype, np.integer):
        raise UsageError(f"position_ids must be integers of shape {list(want)} "
                         f"({'[batch, seq]' if len(want) == 2 else '[seq]'}), "
                         f"got {ids.dtype} of shape {list(ids.shape)}")
    if ids.size and (ids.min() < spec.offset or ids.max() > spec.max_position):
        raise UsageError(f"position_ids must lie in {spec.offset} .. {spec.max_position} (the cache's "
                         f"positions), got {ids.min()} .. {ids.max()}")
