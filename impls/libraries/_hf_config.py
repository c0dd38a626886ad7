"""A transformers config for a RotarySpec: the inverse of `RotarySpec.from_hf_config`.

The config is checked by reading it back: a spec whose round trip differs is refused at build
time, so a library implementation is never judged against a cache its model would not build.
"""

from __future__ import annotations

from typing import Any

from harness.core.kinds.rotary import RotarySpec
from harness.core.kinds.rotary.spec import USES

#: model_type -> (module of its config and rotary class, config class, rotary class)
MODELS = {
    "llama": ("transformers.models.llama.modeling_llama", "LlamaConfig", "LlamaRotaryEmbedding"),
    "gpt_neox": ("transformers.models.gpt_neox.modeling_gpt_neox", "GPTNeoXConfig",
                 "GPTNeoXRotaryEmbedding"),
}


def rope_parameters(spec: RotarySpec) -> dict[str, Any]:
    """`rope_parameters` as transformers 5 reads them: theta, type, the fields the type reads."""
    params: dict[str, Any] = {"rope_type": spec.rope_type, "rope_theta": spec.base,
                              "partial_rotary_factor": spec.rot / spec.head_dim}
    for name in USES[spec.rope_type]:
        value = getattr(spec, name)
        if name != "max_position_embeddings" and value is not None:
            params[name] = list(value) if isinstance(value, tuple) else value
    return params


def max_positions(spec: RotarySpec) -> int:
    """The config's max_position_embeddings: dynamic's own, else what yarn and longrope imply
    (factor x original; at least that for llama3), else the spec's last position + 1."""
    if spec.max_position_embeddings is not None:
        return spec.max_position_embeddings
    if spec.rope_type in ("yarn", "longrope"):
        return int(round(spec.factor * spec.original_max_position_embeddings))
    if spec.rope_type == "llama3":   # transformers warns unless original < max
        return max(spec.seq_len, int(spec.factor * spec.original_max_position_embeddings))
    return max(spec.seq_len, 2)


def config(model_type: str, spec: RotarySpec):
    """The transformers config of `model_type` whose rotary cache is `spec`'s."""
    import importlib

    module, config_class, _ = MODELS[model_type]
    cls = getattr(importlib.import_module(module), config_class)
    cfg = cls(hidden_size=spec.head_dim, num_attention_heads=1, head_dim=spec.head_dim,
              max_position_embeddings=max_positions(spec), rope_parameters=rope_parameters(spec))
    back = RotarySpec.from_hf_config(cfg, length=spec.length, dtype=spec.dtype).replace(offset=spec.offset)
    if back != spec:
        raise ValueError(f"the {model_type} config built for {spec.short()} reads back as {back.short()}")
    return cfg


def rotary_module(model_type: str, spec: RotarySpec):
    """The model's rotary embedding module, built from its config (the untimed setup)."""
    import importlib

    module, _, rotary_class = MODELS[model_type]
    return getattr(importlib.import_module(module), rotary_class)(config(model_type, spec))
