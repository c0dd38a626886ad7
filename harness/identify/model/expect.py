"""Which tensors are positional, and what the config says each should hold.

Positional tensors are found by name (`embed_positions`, `position_embedding(s)`, `pos_embed`,
`wpe`, `inv_freq`...). What the config implies comes from the model type's own code in
transformers 5: Whisper's encoder table is `sinusoids()` (concat, schedule 1 to 1/10000:
freq_shift 1), Marian's and Pegasus' are XLM's table with the cos block second (concat,
freq_shift 0), ViT-MAE's `pos_embed` is MAE's 2-D grid after a cls row; a rotary model's
frequencies are `RotarySpec.from_hf_config`. Any other positional table is learned: the
config gives only its number of rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from harness.core.kinds.table.conventions import CONVENTIONS as TABLE_CONVENTIONS
from harness.core.kinds.grid import CONVENTIONS as GRID_CONVENTIONS
from harness.core.kinds.grid import GridSpec
from harness.core.kinds.rotary import RotarySpec
from harness.core.kinds.table.spec import Spec
from harness.util.exitcodes import UsageError

POSITIONAL = re.compile(r"(^|\.)(embed_positions|position_embeddings?|positional_embeddings?|"
                        r"pos_embed(dings?)?|decoder_pos_embed|pos_emb|wpe)(\.weights?)?$")
INV_FREQ = re.compile(r"(^|\.)inv_freq$")
#: Keys that make a config a rotary one (GPT-J and GPT-NeoX rotate without naming any).
ROPE_KEYS = ("rope_theta", "rope_parameters", "rope_scaling", "rotary_emb_base", "rotary_pct",
             "partial_rotary_factor")
ROPE_TYPES = ("gptj", "gpt_neox")
#: Learned tables one row longer than the config says (a cls token) or two (BART/OPT's
#: positions start at 2), said when the rows are counted.
EXTRA_ROWS = {1: "one more row: the cls token", 2: "two more rows: positions start at 2 "
              "(BART/OPT style)"}


@dataclass(frozen=True)
class Expected:
    """What a positional tensor should hold: a `kind` ("table", "grid", "rotary", "learned",
    or "unknown" with the reason in `text`), the spec when sinusoidal, the rows when learned."""

    kind: str
    text: str
    spec: Any = None
    rows: Optional[int] = None


def is_positional(name: str) -> bool:
    return bool(POSITIONAL.search(name) or INV_FREQ.search(name))


def implied_rotary(config: dict[str, Any]) -> tuple[tuple[str, RotarySpec], ...]:
    """(label, spec) of each rotary cache the config builds: none for a model without rope,
    one per layer type when rope_parameters is given per layer type (Gemma 3)."""
    source = _rope_config(config)
    if source is None:
        return ()
    params = source.get("rope_parameters")
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        return tuple((kind, RotarySpec.from_hf_config({**source, "rope_parameters": p}))
                     for kind, p in params.items())
    return (("", RotarySpec.from_hf_config(source)),)


def default_rotary(config: dict[str, Any]) -> tuple[tuple[str, RotarySpec], ...]:
    """The cache transformers builds for a config that names no rope setting but stores an
    inv_freq (a Llama config without rope_theta): its defaults, rope_theta 10000 included."""
    for candidate in (config, config.get("text_config")):
        if isinstance(candidate, dict) and (candidate.get("head_dim") or candidate.get("hidden_size")):
            try:
                return (("no rope settings: transformers' defaults",
                         RotarySpec.from_hf_config(candidate)),)
            except ValueError:
                continue
    return ()


def _rope_config(config: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The config, or its text_config (a multimodal model), that holds the rope settings."""
    for candidate in (config, config.get("text_config")):
        if isinstance(candidate, dict) and (any(k in candidate for k in ROPE_KEYS)
                                            or candidate.get("model_type") in ROPE_TYPES):
            return candidate
    return None


def expected(name: str, config: dict[str, Any],
             rotary: tuple[tuple[str, RotarySpec], ...]) -> Expected:
    """What the tensor `name` should hold, by the config."""
    if INV_FREQ.search(name):
        rotary = rotary or default_rotary(config)
        if not rotary:
            return Expected("unknown", "no rope settings in the config")
        return Expected("rotary", "; ".join(describe(s, label) for label, s in rotary), rotary)
    rule = RULES.get(config.get("model_type", ""))
    spec = rule(name.split("."), config) if rule else None
    if spec is not None:
        return Expected("grid" if isinstance(spec, GridSpec) else "table", describe(spec), spec)
    return learned(name.split("."), config)


def describe(spec: Any, label: str = "") -> str:
    """A spec's short label, with its named convention when it has one."""
    text = spec.short()
    if isinstance(spec, RotarySpec):
        rest = [t for t in text.split()[1:] if not t.startswith("base=")]
        text = " ".join([f"rotary head_dim={spec.head_dim} base={spec.base:g}", *rest])
    name = _convention(spec)
    return ": ".join(n for n in (label, name, text) if n)


def _convention(spec: Any) -> str:
    """The named convention (harness.core.kinds.table.conventions, the grid kind's) this spec is, if any."""
    if isinstance(spec, Spec):
        found = {n: Spec(spec.length, spec.d_model, dtype=spec.dtype, odd=spec.odd, **f)
                 for n, f in TABLE_CONVENTIONS.items()}
    elif isinstance(spec, GridSpec):
        found = {n: _grid(spec, f) for n, f in GRID_CONVENTIONS.items()}
    else:
        return ""
    return next((n for n, s in found.items() if s == spec), "")


def _grid(spec: GridSpec, fields: dict[str, Any]) -> Optional[GridSpec]:
    try:
        return GridSpec(spec.grid, spec.d_model, dtype=spec.dtype, **fields)
    except ValueError:          # a 3-D convention's fields on a 2-D grid
        return None


def _whisper(parts: list[str], config: dict[str, Any]) -> Optional[Spec]:
    """The encoder's table is sinusoids(); the decoder's is learned."""
    if "encoder" not in parts:
        return None
    return Spec(config["max_source_positions"], config["d_model"], layout="concat", freq_shift=1)


def _xlm_concat(parts: list[str], config: dict[str, Any]) -> Spec:
    """Marian / Pegasus create_weight: pos / 10000^(2 (j // 2) / d), sin block then cos."""
    d = config["d_model"]
    return Spec(config["max_position_embeddings"], d, layout="concat",
                odd="extend" if d % 2 else "error")


def _mae(parts: list[str], config: dict[str, Any]) -> GridSpec:
    """initialize_weights: MAE's 2-D sincos grid of (image / patch)^2 cells after a cls row."""
    side = [_pair(config["image_size"], "image_size")[a] // _pair(config["patch_size"])[a]
            for a in (0, 1)]
    width = config["decoder_hidden_size"] if "decoder" in parts else config["hidden_size"]
    return GridSpec(tuple(side), width, **GRID_CONVENTIONS["mae"])


def _pair(value: Any, name: str = "patch_size") -> tuple[int, int]:
    """An int or a pair of positive ints (image_size, patch_size), or a ValueError naming it."""
    pair = (value, value) if isinstance(value, int) else value
    if (not isinstance(pair, (list, tuple)) or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pair)):
        raise UsageError(f"config field {name} must be a whole number >= 1 or a pair of them, "
                         f"got {value!r}")
    return (pair[0], pair[1])


RULES: dict[str, Callable[[list[str], dict[str, Any]], Any]] = {
    "whisper": _whisper, "marian": _xlm_concat, "pegasus": _xlm_concat, "vit_mae": _mae}


def learned(parts: list[str], config: dict[str, Any]) -> Expected:
    """A learned table: the rows the config gives it, when it gives them."""
    keys = (["max_target_positions"] if "decoder" in parts else []) + \
           (["max_source_positions"] if "encoder" in parts else []) + \
           ["max_position_embeddings", "n_positions", "n_ctx"]
    for key in keys:
        if isinstance(config.get(key), int):
            return Expected("learned", f"learned (config: {key} {config[key]})", rows=config[key])
    size, patch = config.get("image_size"), config.get("patch_size")
    if size and patch:
        (rows, cols), (down, across) = _pair(size, "image_size"), _pair(patch)
        cells = (rows // down) * (cols // across)
        return Expected("learned", f"learned (config: {cells} patches)", rows=cells)
    return Expected("learned", "learned (config gives no length)")


#: fairseq-style tables transformers builds at load as non-persistent buffers: model type ->
#: the config key of each side's length.
FAIRSEQ = {"speech_to_text": (("encoder", "max_source_positions"), ("decoder", "max_target_positions")),
           "m2m_100": (("encoder", "max_position_embeddings"), ("decoder", "max_position_embeddings")),
           "nllb_moe": (("encoder", "max_position_embeddings"), ("decoder", "max_position_embeddings"))}


def computed_tables(config: dict[str, Any]) -> tuple[tuple[str, Spec], ...]:
    """(side, spec) of the sinusoidal tables a model builds at load and never stores: the
    positions a token gets start at pad_token_id + 1 (fairseq's make_positions)."""
    sides = FAIRSEQ.get(config.get("model_type", ""), ())
    pad = config.get("pad_token_id")
    pad = 1 if pad is None else pad
    d = config.get("d_model")
    return tuple((side, Spec(config[key], d, layout="concat", freq_shift=1, offset=pad + 1,
                             odd="pad" if d % 2 else "error"))
                 for side, key in sides if isinstance(config.get(key), int) and isinstance(d, int))
