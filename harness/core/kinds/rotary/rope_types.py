"""The rope_types (Hugging Face's names) and the scaling fields each reads: what the spec
validates and a transformers config is read by, in one place neither imports the other for."""

from __future__ import annotations

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")
#: The scaling fields each rope_type reads (every other one must keep its default).
USES: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor", "max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
             "attention_factor", "mscale", "mscale_all_dim", "truncate"),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "longrope": ("factor", "original_max_position_embeddings", "short_factor", "long_factor",
                 "attention_factor"),
}
#: The fields a rope_type cannot do without (None is not allowed for them).
REQUIRES: dict[str, tuple[str, ...]] = {
    "dynamic": ("max_position_embeddings",),
    "yarn": ("original_max_position_embeddings",),
    "llama3": ("original_max_position_embeddings",),
    "longrope": ("original_max_position_embeddings", "short_factor", "long_factor"),
}
SCALING_FIELDS = ("factor", "original_max_position_embeddings", "max_position_embeddings",
                  "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor", "short_factor",
                  "long_factor", "attention_factor", "mscale", "mscale_all_dim", "truncate")
