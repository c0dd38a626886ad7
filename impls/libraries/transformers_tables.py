"""transformers' 1-D sinusoidal tables: Whisper's `sinusoids` and Marian's `create_weight`.

Both are what the model runs when it builds its position table (Whisper's encoder at init,
Marian's embedding in `_init_weights`); their forwards are lookups into that table, which bench
would rightly call a lookup, so the build is what is verified and timed.
"""

from __future__ import annotations

from harness import Spec, Supports, register

from ._common import LibrarySupports, no_offset, small_rows, two_pairs

F32 = ("float32",)


@register(name="transformers-whisper-sinusoids", backend="torch", library="transformers",
          requires=("transformers",), supports=LibrarySupports("transformers Whisper", Supports(
              layouts=("concat",), dtypes=F32, freq_shifts=(1,)), (two_pairs, no_offset)))
def build_whisper_sinusoids(spec: Spec):
    """modeling_whisper.sinusoids(length, channels, max_timescale=base): concat, half-1 schedule."""
    from transformers.models.whisper.modeling_whisper import sinusoids

    length, channels, base = spec.length, spec.d_model, spec.base
    return lambda: sinusoids(length, channels, max_timescale=base)


@register(name="transformers-marian-sinusoidal", backend="torch", library="transformers",
          requires=("transformers",), supports=LibrarySupports("transformers Marian", Supports(
              layouts=("concat",), dtypes=F32, freq_shifts=(0,), base=False, odd=("extend",)),
              (small_rows(1 << 19),)))
def build_marian_sinusoidal(spec: Spec):
    """MarianSinusoidalPositionalEmbedding(offset + length, d).create_weight()[offset:]: XLM's
    float64 angles in a Python loop, sin block then cos block, odd 'extend', base 10000."""
    import torch
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    # create_weight reads only the weight's shape and dtype: built on the meta device, the module
    # keeps no table around (bench would call a kept one a lookup)
    with torch.device("meta"):
        module = MarianSinusoidalPositionalEmbedding(spec.offset + spec.length, spec.d_model)
    offset = spec.offset
    return lambda: module.create_weight()[offset:]
