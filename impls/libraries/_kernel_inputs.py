"""What the library rotary kernels are handed, built in setup (registers nothing).

Liger's, FlashAttention's and torch.compile'd model code take cos and sin that the caller
computed. The best a caller can give is each position id's angle formed in float64, times the
attention scaling, rounded once to the dtype: so what verify measures is the kernel's own
arithmetic, not a cache's. (xformers' `rope_padded` forms its angles itself; it takes none.)
q and k go to the device in the case's form (`qk_layout`, k's own heads) as they are: nothing is
converted inside the timed call. An in-place kernel gets `harness.InPlace`: `reset` copies the
given q and k back into the tensors it rotates, outside the timed region.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from harness import InPlace


def tensors(spec: Any, device: str, *arrays: np.ndarray) -> list:
    """The arrays as tensors of the spec's dtype on `device`, in the layout they came in."""
    import torch

    dtype = getattr(torch, spec.dtype)
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device, dtype) for a in arrays]


def cos_sin(spec: Any, positions: np.ndarray, device: str, duplicated: bool) -> tuple:
    """cos and sin at each position id: `[seq, n_freq]` for ids `[seq]`, `[batch, seq, n_freq]`
    for `[batch, seq]`; `duplicated`: each frequency twice, `[..., rot]` as cat(f, f) (the
    half layout's model cache). float64 angles times the scaling, rounded once to the dtype."""
    import torch

    theta = np.asarray(positions, dtype=np.float64)[..., None] * spec.inv_freq()
    pair = [np.cos(theta) * spec.attention_scaling, np.sin(theta) * spec.attention_scaling]
    if duplicated:
        pair = [np.concatenate([x, x], axis=-1) for x in pair]
    return tuple(torch.from_numpy(np.ascontiguousarray(x)).to(device, getattr(torch, spec.dtype))
                 for x in pair)


def in_place(q, k, rotate: Callable[[Any, Any], Any]) -> InPlace:
    """`rotate(q, k)` on tensors it owns (same shape and strides as q and k), which `reset`
    refills from q and k before every call."""
    qx, kx = q.clone(), k.clone()

    def reset() -> None:
        qx.copy_(q)
        kx.copy_(k)

    return InPlace(reset, lambda: rotate(qx, kx))


def full_rotary(spec: Any) -> Optional[str]:
    """full rotary"""
    if spec.rot != spec.head_dim:
        return f"rotates the whole head, got rotary_dim={spec.rot} < head_dim={spec.head_dim}"
    return None
