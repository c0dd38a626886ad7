"""What the library rotary kernels are handed besides q and k (registers nothing).

Liger's, FlashAttention's and torch.compile'd model code take cos and sin that the caller
computed. The best a caller can give is each position's angle formed in float64, times the
attention scaling, rounded once to the dtype: so what verify measures is the kernel's own
arithmetic, not a cache's. (xformers' `rope_padded` forms its angles itself; it takes none.)
q, k and the position ids come at every call, on the device in the case's form (`qk_layout`,
k's own heads), converted by the harness outside the timed region; a model keeps a cos/sin
cache of every position and gathers the rows at its position ids each step, and so does each
call here (`CosSin.at`). An in-place kernel rotates the q and k it is handed.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np


class CosSin:
    """cos and sin of every position 0 .. offset + length - 1 (float64 angles times the scaling,
    rounded once to the dtype) on `device`, made in setup; `duplicated`: each frequency twice,
    `[..., rot]` as cat(f, f) (the half layout's model cache), else `[..., n_freq]`."""

    def __init__(self, spec: Any, device: str, duplicated: bool) -> None:
        import torch

        theta = np.arange(spec.seq_len, dtype=np.float64)[:, None] * spec.inv_freq()
        pair = [np.cos(theta) * spec.attention_scaling, np.sin(theta) * spec.attention_scaling]
        if duplicated:
            pair = [np.concatenate([x, x], axis=-1) for x in pair]
        self.cos, self.sin = (torch.from_numpy(np.ascontiguousarray(x)).to(
            device, getattr(torch, spec.dtype)) for x in pair)

    def at(self, positions: Any) -> tuple[Any, Any]:
        """The rows at int64 position ids `[seq]` (-> `[seq, n]`) or `[batch, seq]` (-> `[batch,
        seq, n]`), gathered on the device."""
        flat = positions.reshape(-1)
        return tuple(t.index_select(0, flat).view(*positions.shape, t.shape[-1])
                     for t in (self.cos, self.sin))


def full_rotary(spec: Any) -> Optional[str]:
    """full rotary"""
    if spec.rot != spec.head_dim:
        return f"rotates the whole head, got rotary_dim={spec.rot} < head_dim={spec.head_dim}"
    return None
