"""torch.compile of transformers' Llama `apply_rotary_pos_emb`, on a CUDA device (registers one).

What tritonbench's `rope` operator times beside Liger: the model's own apply, compiled by
inductor (which writes it as a Triton kernel on a GPU). It takes cos/sin rows per token
(`[1 or batch, seq, rot]`, so per-sequence ids), broadcasts them over any head count (GQA) and
over either layout (`unsqueeze_dim` 1 for heads first, 2 for sequence first), and rotates the
whole head by halves (rotate_half). It is given the best cos/sin a caller can give
(_kernel_inputs); compiling happens in setup (one untimed call), so only the compiled call is
timed. On the CPU the compile costs more than verify's whole case matrix, so it is registered
for CUDA only (tests/test_triton_libraries.py checks its wiring on the CPU, compile as identity).
"""

from __future__ import annotations

from harness import ApplyForms, RotarySpec, RotarySupports
from harness.core.registry import register

from ._common import LibrarySupports
from ._kernel_inputs import CosSin, full_rotary

#: verify and bench build this apply at dozens of shapes and dtypes in one process, where a model
#: builds it at one: dynamo's default of 8 recompiles of a function then fails every case past
#: the eighth under fullgraph=True (FailOnRecompileLimitHit, seen on an H200 on 2026-11-27).
RECOMPILES = 1024

COMPILED = LibrarySupports("transformers Llama (torch.compile)",
                           RotarySupports(layouts=("half",)), (full_rotary,))


@register(name="transformers-llama-rope-apply-compiled", backend="torch", device="cuda",
          workload="apply", library="transformers", requires=("transformers",), supports=COMPILED,
          forms=ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True))
def build_llama_apply_compiled(spec: RotarySpec):
    """torch.compile(apply_rotary_pos_emb)(q, k, cos, sin, unsqueeze_dim) (inductor, Triton),
    cos and sin gathered at the position ids from a cache of every position."""
    return build(spec)


def build(spec: RotarySpec, device: str = "cuda"):
    """The factory (`device`: where its cos/sin cache goes; a test runs it on the CPU). The
    compile happens at the first call, with the inputs' shapes (`dynamic=False`)."""
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    allow_recompiles(torch)
    cache = CosSin(spec, device, duplicated=True)
    unsqueeze_dim = 1 if spec.qk_layout == "bhsd" else 2
    compiled = torch.compile(apply_rotary_pos_emb, fullgraph=True, dynamic=False)

    @torch.no_grad()
    def apply(q, k, positions):
        cos, sin = cache.at(positions)
        if cos.dim() == 2:
            cos, sin = cos[None], sin[None]
        return compiled(q, k, cos, sin, unsqueeze_dim=unsqueeze_dim)

    return apply


def allow_recompiles(torch) -> None:
    """Lift dynamo's recompile limits to RECOMPILES (never lower them): one compile per shape."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), RECOMPILES))
