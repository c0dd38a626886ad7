"""keras-hub's SinePositionEncoding and RotaryEmbedding layers (TensorFlow backend).

SinePositionEncoding computes in its compute dtype (float16 under mixed precision) and takes the
first position as `start_index`; odd widths get the interleaved 'extend' column (sin masks by
index). RotaryEmbedding rotates halves (x1, x2 = split(x, 2)) with float32 positions and
frequencies, cos and sin cast to its compute dtype.
"""

from __future__ import annotations

from typing import Optional

from harness import Spec, Supports, register
from harness.core.kinds.rotary import RotarySpec

from ..table.library_conventions import LibrarySupports, _float16_angles, _positions_fit_dtype
from ._common import float32_angles, float32_positions


def _float64_is_float32(spec: Spec) -> Optional[str]:
    """no f64 (finding)"""
    if spec.dtype == "float64":
        return ("a float64 layer is only float32-accurate (measured 1.5e-6 at 1500 x 128 against "
                "a float64 tolerance of 1.7e-14; docs/libraries.md)")
    return None


@register(name="keras-hub-sine-position-encoding", backend="tensorflow", library="keras-hub",
          requires=("keras_hub",), supports=LibrarySupports("keras-hub", Supports(
              layouts=("interleaved",), dtypes=("float16", "float32", "float64"), freq_shifts=(0,),
              odd=("extend",)), (_float64_is_float32, _float16_angles, _positions_fit_dtype)))
def build_keras_hub_sine(spec: Spec):
    """SinePositionEncoding(max_wavelength=base, dtype)(x[1, length, d], start_index=offset)[0];
    x, read only for its shape, is made in the call (kept, bench would call it a lookup)."""
    import keras_hub
    import tensorflow as tf

    layer = keras_hub.layers.SinePositionEncoding(max_wavelength=spec.base, dtype=spec.dtype)
    shape, dtype, offset = (1, spec.length, spec.d_model), spec.dtype, spec.offset
    return lambda: layer(tf.zeros(shape, dtype=dtype), start_index=offset)[0]


def _keras_rope_type(spec: RotarySpec) -> Optional[str]:
    """rope_type default/linear/yarn"""
    if spec.rope_type not in ("default", "linear", "yarn"):
        why = (" (its 'dynamic' divides by factor ** (rot / (rot - 2)) at every length: no "
               "RotarySpec has it)" if spec.rope_type == "dynamic" else "")
        return f"has linear and yarn scaling only, got rope_type={spec.rope_type!r}{why}"
    if spec.rope_type == "yarn" and (spec.attention_factor is not None or spec.mscale is not None
                                     or spec.mscale_all_dim is not None or spec.factor < 1):
        return ("its yarn always scales cos and sin by 0.1 ln(factor) + 1: no attention_factor, "
                "mscale or mscale_all_dim, factor >= 1")
    return None


@register(name="keras-hub-rope-apply", backend="tensorflow", workload="apply", library="keras-hub",
          requires=("keras_hub",), supports=LibrarySupports("keras-hub", float32_angles(
              "half", "positions, frequencies and angles are float32"), (_keras_rope_type, float32_positions)))
def build_keras_hub_rope(spec: RotarySpec):
    """RotaryEmbedding(max_wavelength=base, scaling_factor=factor, rope_type, yarn fields,
    sequence_axis=2)(x[..., :rot], positions=positions), concatenated with the unrotated rest
    as keras-hub's GPT-NeoX attention does; q and k are [batch, heads, seq, head_dim]."""
    import keras_hub
    import tensorflow as tf

    yarn = spec.rope_type == "yarn"
    layer = keras_hub.layers.RotaryEmbedding(
        max_wavelength=spec.base, scaling_factor=spec.factor, rope_type="yarn" if yarn else "linear",
        beta_fast=spec.beta_fast, beta_slow=spec.beta_slow, truncate=spec.truncate,
        original_max_position_embeddings=spec.original_max_position_embeddings or 4096,
        sequence_axis=2, dtype=spec.dtype)
    rot = spec.rot

    def rotate(x, positions):
        if rot == x.shape[-1]:
            return layer(x, positions=positions)
        return tf.concat([layer(x[..., :rot], positions=positions), x[..., rot:]], axis=-1)

    return lambda q, k, positions: (rotate(q, positions), rotate(k, positions))
