"""A RotarySpec's fields from a transformers config, read the way transformers 5.23 reads it.

Both spellings: v4's top-level `rope_theta` with `rope_scaling` (`rope_type`, or the legacy
`type`), and v5's `rope_parameters`. head_dim is `head_dim`, else hidden_size //
num_attention_heads; partial rotary is `partial_rotary_factor` (or GPT-NeoX's `rotary_pct`,
0.25 when absent, and `rotary_emb_base`); GPT-J (`model_type == "gptj"`) rotates `rotary_dim`
dims in the interleaved layout with base 10000. As in transformers, a missing
`original_max_position_embeddings` is the top-level one, else max_position_embeddings, and a
missing yarn or longrope `factor` is max_position_embeddings / original_max_position_embeddings;
Phi-3's legacy "su" and "yarn" are longrope.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from harness.core.kinds.rotary.rope_types import REQUIRES, ROPE_TYPES, USES
from harness.util.exitcodes import UsageError

#: transformers' attribute_map aliases (GPT-J, GPT-2 style configs) -> the standard names.
_ALIASES = {"n_embd": "hidden_size", "n_head": "num_attention_heads",
            "n_positions": "max_position_embeddings"}
#: Older rope_type names some model types still accept (Phi-3 maps both to longrope).
_RENAMED = {"phi3": {"su": "longrope", "yarn": "longrope"},
            "phi4_multimodal": {"su": "longrope", "yarn": "longrope"}}
#: Scaling keys read straight from the rope parameters, with transformers' `x or default` rule.
_OR_DEFAULT = {"beta_fast": 32.0, "beta_slow": 1.0}


def _as_dict(config: Any) -> dict[str, Any]:
    if isinstance(config, Mapping):
        data = dict(config)
    elif hasattr(config, "to_dict"):
        data = config.to_dict()
    else:
        raise UsageError(f"config must be a dict or a transformers config, got {type(config).__name__}")
    for alias, name in _ALIASES.items():
        if alias in data and data.get(name) is None:
            data[name] = data[alias]
    return data


def _rope_parameters(data: dict[str, Any]) -> dict[str, Any]:
    params = data.get("rope_parameters") or data.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        raise UsageError(f"rope_parameters / rope_scaling must be a dict, got {params!r}")
    if params and all(isinstance(v, Mapping) or v is None for v in params.values()):
        raise UsageError(f"rope_parameters is given per layer type ({sorted(params)}): pass a config "
                         "whose rope_parameters is one of them")
    return dict(params)


def _count(name: str, value: Any) -> int:
    """A config's positive whole number, or a ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"config field {name} must be a whole number >= 1, got {value!r}")
    return value


def _number(name: str, value: Any, low: float = 0.0, high: float = math.inf) -> float:
    """A config's finite number in (low, high], or a ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high \
            or not math.isfinite(value):
        within = f"in ({low:g}, {high:g}]" if math.isfinite(high) else f"> {low:g}, finite"
        raise UsageError(f"config field {name} must be a number {within}, got {value!r}")
    return float(value)


def _head_dim(data: dict[str, Any]) -> int:
    if data.get("head_dim"):
        return _count("head_dim", data["head_dim"])
    hidden, heads = data.get("hidden_size"), data.get("num_attention_heads")
    if not hidden or not heads:
        raise UsageError("config must give head_dim, or hidden_size and num_attention_heads")
    return _count("hidden_size", hidden) // _count("num_attention_heads", heads)


def _rotary_dim(data: dict[str, Any], params: dict[str, Any], head_dim: int) -> Optional[int]:
    if data.get("model_type") == "gptj":
        dim = data.get("rotary_dim", 64)        # GPTJConfig's default; None rotates the whole head
        return None if dim is None or _count("rotary_dim", dim) >= head_dim else dim
    name = "partial_rotary_factor"
    fraction = params.get(name, data.get(name))
    if fraction is None:
        name = "rotary_pct"
        fraction = data.get(name, 0.25 if data.get("model_type") == "gpt_neox" else None)
    if fraction is None or _number(name, fraction, 0.0, 1.0) == 1.0:
        return None
    dim = int(head_dim * fraction)   # transformers truncates the same way
    if dim < 2 or dim % 2:
        raise UsageError(f"partial_rotary_factor {fraction} of head_dim {head_dim} gives {dim} rotated dims; "
                         "it must give an even number >= 2")
    return dim


def _base(data: dict[str, Any], params: dict[str, Any]) -> float:
    if data.get("model_type") == "gptj":
        return 10000.0   # hard-coded in modeling_gptj.create_sinusoidal_positions
    for name, value in (("rope_theta", params.get("rope_theta")), ("rope_theta", data.get("rope_theta")),
                        ("rotary_emb_base", data.get("rotary_emb_base"))):
        if value is not None:
            return _number(name, value)
    return 10000.0


def _scaling(rope_type: str, data: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The spec's scaling fields for rope_type, from the config (only those it reads)."""
    mpe = data.get("max_position_embeddings")
    out: dict[str, Any] = {}
    uses = USES[rope_type]
    if "original_max_position_embeddings" in uses:
        out["original_max_position_embeddings"] = (data.get("original_max_position_embeddings")
                                                   or params.get("original_max_position_embeddings") or mpe)
    if "max_position_embeddings" in uses:
        out["max_position_embeddings"] = mpe
    for name in uses:
        if name in out or name not in params:
            continue
        value = params[name]
        if name in _OR_DEFAULT:
            value = value or _OR_DEFAULT[name]
        if value is not None:
            out[name] = value
    if "factor" in uses and out.get("factor") is None:
        if rope_type in ("yarn", "longrope") and mpe and out.get("original_max_position_embeddings"):
            out["factor"] = mpe / out["original_max_position_embeddings"]
        elif rope_type not in ("yarn", "longrope"):
            raise UsageError(f"rope_parameters['factor'] is required for rope_type={rope_type!r}")
    for name in REQUIRES.get(rope_type, ()):
        if out.get(name) is None:
            raise UsageError(f"config lacks {name!r}, which rope_type={rope_type!r} requires")
    return out


def hf_config_fields(config: Any, length: Optional[int] = None, dtype: str = "float32") -> dict[str, Any]:
    """The RotarySpec fields of the cache a model of this config builds (length: its max
    positions); `RotarySpec.from_hf_config` makes the spec of them."""
    data = _as_dict(config)
    params = _rope_parameters(data)
    rope_type = params.get("rope_type", params.get("type", "default"))
    if not isinstance(rope_type, str):
        raise UsageError(f"config field rope_type must be one of {ROPE_TYPES}, got {rope_type!r}")
    rope_type = _RENAMED.get(data.get("model_type"), {}).get(rope_type, rope_type)
    if rope_type not in ROPE_TYPES:
        raise UsageError(f"rope_type must be one of {ROPE_TYPES}, got {rope_type!r}")
    head_dim = _head_dim(data)
    if length is None:
        length = data.get("max_position_embeddings")
        if length is None:
            raise UsageError("length is required: the config has no max_position_embeddings")
        length = _count("max_position_embeddings", length)
    layout = "interleaved" if data.get("model_type") == "gptj" else "half"
    return dict(length=length, head_dim=head_dim, rotary_dim=_rotary_dim(data, params, head_dim),
                base=_base(data, params), layout=layout, dtype=dtype, rope_type=rope_type,
                **_scaling(rope_type, data, params))
