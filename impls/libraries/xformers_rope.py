"""xformers' `rope_padded`: RoPE fused with placing k (and v) into a KV cache (registers one).

`rope_padded(xq, xk, xv, cache_k, cache_v, attn_bias, seqpos=...)` takes the batch concatenated
along the sequence, `[1, batch x seq, heads, head_dim]` (a view of sequence-first memory), k
with fewer heads than q, and one position per token (`seqpos`, so per-sequence ids too). It
forms each angle itself, `seqpos * theta ** (-2i / head_dim) / linear_scale`, in float32, with
Llama 3.1's frequency smoothing as its `use_dynamic_scaling`; it rotates the whole head. It
returns the rotated q and writes the rotated k into `cache_k` and v, unrotated, into `cache_v`:
v is what an inference step hands it, so its time includes that copy, as in its use. The KV
cache is laid out as the batch (`BlockDiagonalCausalWithOffsetPaddedKeysMask` with each
sequence's keys padded to its length), so cache_k is k's rotation in place of k. A CUDA device
only (it enters `torch.cuda.device`).
"""

from __future__ import annotations

from typing import Optional

from harness import ApplyForms, RotarySpec, RotarySupports
from harness.core.registry import register

from ._common import LibrarySupports
from ._kernel_inputs import full_rotary

#: The rope types its angle formula covers (the others need a cache it does not take).
ROPE_TYPES = ("default", "linear", "llama3")


def rope_types(spec: RotarySpec) -> Optional[str]:
    """default/linear/llama3"""
    if spec.rope_type not in ROPE_TYPES:
        return f"forms its own angles for {'/'.join(ROPE_TYPES)} only, got rope_type={spec.rope_type!r}"
    return None


XFORMERS = LibrarySupports("xformers", RotarySupports(), (full_rotary, rope_types))


def scaling(spec: RotarySpec) -> dict:
    """rope_padded's keywords for the spec's frequencies."""
    keywords = {"theta": spec.base, "adjacents": spec.layout == "interleaved"}
    if spec.rope_type == "linear":
        keywords["linear_scale"] = spec.factor
    if spec.rope_type == "llama3":
        keywords.update(use_dynamic_scaling=True,
                        dynamic_old_context_len=float(spec.original_max_position_embeddings),
                        dynamic_scale_factor=spec.factor,
                        dynamic_low_freq_factor=spec.low_freq_factor,
                        dynamic_high_freq_factor=spec.high_freq_factor)
    return keywords


@register(name="xformers-rope-padded", backend="triton", device="cuda", workload="apply",
          library="xformers", requires=("xformers",), supports=XFORMERS,
          forms=ApplyForms(layouts=("bshd",), gqa=True, batch_positions=True))
def build_xformers_rope_padded(spec: RotarySpec):
    """rope_padded(q, k, v, cache_k, cache_v, attn_bias, seqpos=ids): q rotated, k rotated into
    cache_k, v copied into cache_v (float32 angles)."""
    import torch
    from xformers.ops import rope_padded
    from xformers.ops.fmha.attn_bias import BlockDiagonalCausalWithOffsetPaddedKeysMask

    keywords = scaling(spec)
    biases: dict = {}    # per (batch, seq): built on the first call of that shape, host work

    @torch.no_grad()
    def apply(q, k, positions):
        batch, seq = q.shape[:2]
        qx, kx = (t.reshape(1, batch * seq, *t.shape[2:]) for t in (q, k))
        if (batch, seq) not in biases:
            biases[batch, seq] = (torch.zeros_like(kx),
                                  BlockDiagonalCausalWithOffsetPaddedKeysMask.from_seqlens(
                                      q_seqlen=[seq] * batch, kv_padding=seq,
                                      kv_seqlen=[seq] * batch, device=qx.device))
        vx, bias = biases[batch, seq]
        seqpos = positions.expand(batch, seq).reshape(-1)
        cache_k, cache_v = torch.empty_like(kx), torch.empty_like(kx)
        out_q = rope_padded(qx, kx, vx, cache_k, cache_v, bias, seqpos=seqpos, **keywords)
        return out_q.view(q.shape), cache_k.view(k.shape)

    return apply
