"""Small torch packages with their own sinusoidal or rotary code: positional-encodings,
openai-whisper, rotary-embedding-torch and torchtune, each called as its README shows.

They compute in float32 and cast to the input's dtype, so float64 is refused (its error would be
float32's).
"""

from __future__ import annotations

from typing import Optional

from harness import Spec, Supports, register
from harness.core.kinds.rotary import RotarySpec

from harness import RotarySupports
from ._common import even_width, LibrarySupports, no_offset, torch_dtype, two_pairs

F32_AND_HALVES = ("float16", "bfloat16", "float32")
INTERLEAVED = RotarySupports(dtypes=F32_AND_HALVES, layouts=("interleaved",),
                             why_dtypes="angles are float32, cast to the input's dtype")


def _unscaled(spec: RotarySpec) -> Optional[str]:
    """rope_type default"""
    return None if spec.rope_type == "default" else f"has no rope scaling, got {spec.rope_type!r}"


def _default_or_linear(spec: RotarySpec) -> Optional[str]:
    """rope_type default/linear with factor >= 1 (RotaryEmbedding asserts interpolate_factor >= 1)"""
    if spec.rope_type not in ("default", "linear"):
        return f"has interpolate_factor (linear) only, got rope_type={spec.rope_type!r}"
    if spec.rope_type == "linear" and spec.factor < 1:
        return f"interpolate_factor must be >= 1 (it asserts so), got factor={spec.factor:g}"
    return None


def _full_rotary(spec: RotarySpec) -> Optional[str]:
    """full rotary"""
    return None if spec.rotary_dim is None else f"rotates the whole head, got rotary_dim={spec.rotary_dim}"


def _cache_fits(spec: RotarySpec) -> Optional[str]:
    """(offset+length)*rot<=2^24"""
    cells = spec.seq_len * spec.rot
    return None if cells <= 1 << 24 else f"caches every position up to the last: {cells} cells > 2^24"


@register(name="positional-encodings-1d-torch", backend="torch", library="positional-encodings",
          requires=("positional_encodings",), supports=LibrarySupports("positional-encodings", Supports(
              layouts=("interleaved",), dtypes=F32_AND_HALVES, freq_shifts=(0,), base=False),
              (no_offset, even_width)))
def build_positional_encodings_torch(spec: Spec):
    """PositionalEncoding1D(d)(x[1, length, d])[0]; its cache of the last result is cleared after
    each call, so every call builds, returns a fresh table and leaves none behind."""
    import torch
    from positional_encodings.torch_encodings import PositionalEncoding1D

    module = PositionalEncoding1D(spec.d_model)
    # it reads only the input's shape, dtype and device: a stride-0 view, made in the call (bench
    # counts a view kept from setup at its full size)
    one = torch.zeros((1, 1, 1), dtype=torch_dtype(spec.dtype))
    shape = (1, spec.length, spec.d_model)

    def table():
        out = module(one.expand(shape))[0]
        module.cached_penc = None
        return out

    return table


@register(name="positional-encodings-1d-tf", backend="tensorflow", library="positional-encodings",
          requires=("positional_encodings",), supports=LibrarySupports("positional-encodings", Supports(
              layouts=("interleaved",), dtypes=("float32",), freq_shifts=(0,), base=False),
              (no_offset, even_width)))
def build_positional_encodings_tf(spec: Spec):
    """TFPositionalEncoding1D(d)(x[1, length, d])[0] (a tf.function: each call runs the graph);
    float32 only: its `dtype` argument is accepted and ignored. The input it needs only for its
    shape is made in the call (TF has no stride-0 view; kept, bench would call it a lookup)."""
    import tensorflow as tf
    from positional_encodings.tf_encodings import TFPositionalEncoding1D

    layer = TFPositionalEncoding1D(spec.d_model)
    shape = (1, spec.length, spec.d_model)
    return lambda: layer(tf.zeros(shape, dtype=tf.float32))[0]


@register(name="whisper-sinusoids", backend="torch", library="openai-whisper", requires=("whisper",),
          supports=LibrarySupports("openai-whisper", Supports(
              layouts=("concat",), dtypes=("float32",), freq_shifts=(1,)), (two_pairs, no_offset)))
def build_whisper_sinusoids(spec: Spec):
    """whisper.model.sinusoids(length, channels, max_timescale=base): the audio encoder's table."""
    from whisper.model import sinusoids

    length, channels, base = spec.length, spec.d_model, spec.base
    return lambda: sinusoids(length, channels, max_timescale=base)


@register(name="rotary-embedding-torch-apply", backend="torch", workload="apply",
          library="rotary-embedding-torch", requires=("rotary_embedding_torch",),
          supports=LibrarySupports("rotary-embedding-torch", INTERLEAVED, (_default_or_linear,)))
def build_rotary_embedding_torch(spec: RotarySpec):
    """freqs = RotaryEmbedding(rot, theta=base, interpolate_factor=factor)(positions / factor),
    then apply_rotary_emb(freqs, q) and (freqs, k): interleaved, rotates the first rot dims.

    forward(t) does not apply interpolate_factor: get_seq_pos divides the positions first
    (rotate_queries_or_keys does it for contiguous ones), so this does the same for any positions.
    """
    import torch
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb

    module = RotaryEmbedding(spec.rot, theta=spec.base, interpolate_factor=spec.factor)

    @torch.no_grad()
    def apply(q, k, positions):
        freqs = module(positions / module.interpolate_factor)
        return apply_rotary_emb(freqs, q), apply_rotary_emb(freqs, k)

    return apply


@register(name="torchtune-rope-apply", backend="torch", workload="apply", library="torchtune",
          requires=("torchtune",), supports=LibrarySupports(
              "torchtune", INTERLEAVED, (_unscaled, _full_rotary, _cache_fits)))
def build_torchtune(spec: RotarySpec):
    """RotaryPositionalEmbeddings(head_dim, max_seq_len=offset+length, base)(x, input_pos=...)
    on q and k as [b, s, n_h, h_d] (transposed views): its cache is built at construction."""
    import torch
    from torchtune.modules import RotaryPositionalEmbeddings

    module = RotaryPositionalEmbeddings(spec.head_dim, max_seq_len=spec.seq_len, base=spec.base)

    @torch.no_grad()
    def apply(q, k, positions):
        input_pos = positions[None].expand(q.shape[0], -1)
        return (module(q.transpose(1, 2), input_pos=input_pos).transpose(1, 2),
                module(k.transpose(1, 2), input_pos=input_pos).transpose(1, 2))

    return apply
