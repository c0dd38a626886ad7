"""Liger-Kernel's Triton RoPE, through its public `liger_rotary_pos_emb` (registers one).

Liger's kernel rotates q and k in place in their `[batch, seq, heads, head_dim]` memory: it is
called, as transformers' attention calls it, with the heads-first views of that memory
(`q.transpose(1, 2)`), and returns heads-first views of the same memory. Given a contiguous
heads-first q it would copy it first, so it declares the sequence-first layout only. It takes
k with fewer heads than q, one cos/sin row per token (`[1 or batch, seq, rot]`, so per-sequence
position ids) and a partial rotary width (the width of cos/sin); it rotates halves only
(rotate_half), and computes in cos/sin's dtype (so Triton's interpreter cannot check it in
bfloat16). The cos/sin it is given are the best a caller can give (_kernel_inputs). It runs on a
CUDA device, or on the CPU in Triton's interpreter (`nox -s triton`).
"""

from __future__ import annotations

from harness import ApplyForms, RotarySpec, RotarySupports
from harness.core.registry import register

from .._triton_device import DEVICE, interpreted_bfloat16
from ._common import LibrarySupports
from ._kernel_inputs import CosSin

FORMS = ApplyForms(layouts=("bshd",), gqa=True, batch_positions=True, in_place=True)
LIGER = LibrarySupports("Liger-Kernel", RotarySupports(layouts=("half",)), (interpreted_bfloat16,))


@register(name="liger-rope-apply", backend="triton", device=DEVICE, workload="apply",
          library="liger-kernel", requires=("liger_kernel",), supports=LIGER, forms=FORMS)
def build_liger_rope_apply(spec: RotarySpec):
    """liger_rotary_pos_emb(q, k, cos, sin) in place on [batch, seq, heads, head_dim] memory,
    cos and sin gathered at the position ids from a cache of every position."""
    from liger_kernel.transformers.rope import liger_rotary_pos_emb

    cache = CosSin(spec, DEVICE, duplicated=True)

    def rotate(q, k, positions):
        cos, sin = cache.at(positions)
        if cos.dim() == 2:   # ids [seq]: one cos/sin row per position, shared by the batch
            cos, sin = cos[None], sin[None]
        oq, ok = liger_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        return oq.transpose(1, 2), ok.transpose(1, 2)

    return rotate
