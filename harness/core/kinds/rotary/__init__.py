"""The rotary (RoPE) kind: a cos/sin cache, and q and k rotated by it.

Two workloads. `cache` builds `(cos, sin)`, each `[length, rot]` in the spec's dtype:
`cos[p, j] = attention_scaling * cos((offset + p) * inv_freq[f(j)])`, f(j) = j % n_freq for the
"half" layout (neox / Llama rotate_half) and j // 2 for "interleaved" (GPT-J). `apply` takes q and
k `[batch, heads, seq, head_dim]` and int64 positions `[seq]`, and returns both rotated in their
first `rot` dims. An apply implementation may declare other forms it takes (`ApplyForms`: the
`[batch, seq, heads, head_dim]` layout, k with fewer heads than q, position ids `[batch, seq]`,
in place); the spec's apply fields say which form a case is (forms.py). See docs/rotary.md.
"""

from __future__ import annotations

from typing import Any, Optional

from harness.core.kinds import Kind, Workload, add
from harness.core.kinds.rotary.apply import APPLY
from harness.core.kinds.rotary.cases import rotary_cases
from harness.core.kinds.rotary.forms import ApplyForms, describe_case, is_apply_form
from harness.core.kinds.rotary.reference import apply_reference, cache_reference
from harness.core.kinds.rotary.spec import LAYOUTS, ROPE_TYPES, RotarySpec
from harness.core.kinds.rotary.tolerance import apply_tolerance, cache_tolerance, exact_cache_tolerance

#: Named conventions: bench times the first an implementation supports.
CONVENTIONS: dict[str, dict] = {
    "neox": {"layout": "half"},
    "gptj": {"layout": "interleaved"},
    "llama3": {"layout": "half", "rope_type": "llama3", "base": 500000.0, "factor": 8.0,
               "original_max_position_embeddings": 8192},
    # apply as kernels take it (forms.py): k with half q's heads, position ids per sequence,
    # sequence first (FlashAttention, vLLM) or heads first (Liger); `bench --convention` picks one
    "gqa-bshd": {"layout": "half", "qk_layout": "bshd", "kv_heads": 2, "position_ids": "batch"},
    "gqa-bhsd": {"layout": "half", "kv_heads": 2, "position_ids": "batch"},
    # the shapes the library kernels are tuned for (tritonbench's rope operator, Liger's
    # Llama-3-8B): 8 kv heads, ids [seq], sequence first, the one form every one of them takes
    "gqa8-bshd": {"layout": "half", "qk_layout": "bshd", "kv_heads": 8, "base": 500000.0},
}


def _cache_takes(spec: RotarySpec, forms: Any) -> Optional[str]:
    if is_apply_form(spec):
        return f"a case of apply's forms ({describe_case(spec)}): the cache is the same for every form"
    return None


def bench_spec(length: int, width: int, dtype: str, convention: str) -> RotarySpec:
    """The spec bench times for a cell: width is head_dim."""
    return RotarySpec(length, head_dim=width, dtype=dtype, **CONVENTIONS[convention])


ROTARY = add(Kind(
    name="rotary", spec_type=RotarySpec, reference=cache_reference, tolerance=cache_tolerance,
    exact=exact_cache_tolerance, cases=rotary_cases,
    workloads=(
        Workload("cache", shape=lambda spec, batch, heads: (2, spec.length, spec.rot), parts=("cos", "sin"),
                 accepts=_cache_takes, usual=(("cpu", ("rotary-torch-cache",)), ("cuda", ("rotary-torch-cuda-cache",))),
                 order=2, roof="fastest bare fill of the same bytes (cos and sin)",
                 doc="build the (cos, sin) cache, each [length, rot]"),
        APPLY,
    ),
    conventions=CONVENTIONS, bench_spec=bench_spec,
    reader="harness.identify.readers.rotary", studies=("harness.verbs.precision.rotary", "harness.verbs.precision.rotary_apply"),
    bench_sizes=((512, 4096, 32768), (64, 128)),
    bench_sizes_quick=((512, 8192), (64, 128)),
    axes=("positions", "head_dim"),
    # what models run RoPE in: float32 caches, bf16/fp16 caches and activations
    bench_dtypes=("float32", "bfloat16", "float16"),
    doc="rotary position embeddings (RoPE): the cos/sin cache and its apply to q and k",
))

__all__ = ["ApplyForms", "CONVENTIONS", "LAYOUTS", "ROPE_TYPES", "ROTARY", "RotarySpec", "apply_reference",
           "apply_tolerance", "bench_spec", "cache_reference", "cache_tolerance", "exact_cache_tolerance"]
