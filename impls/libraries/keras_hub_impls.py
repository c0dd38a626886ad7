"""keras-hub's SinePositionEncoding layer, called on an input of the table's shape.

The layer computes in its compute dtype (float16 under mixed precision) and takes the first
position as `start_index`; odd widths get the interleaved 'extend' column (sin masks by index).
"""

from __future__ import annotations

from typing import Optional

from harness import Spec, Supports, register
from ..library_conventions import LibrarySupports, _positions_fit_dtype


def _float64_is_float32(spec: Spec) -> Optional[str]:
    """no f64 (finding)"""
    if spec.dtype == "float64":
        return ("a float64 layer is only float32-accurate (measured 1.5e-6 at 1500 x 128 against "
                "a float64 tolerance of 1.7e-14; docs/libraries.md)")
    return None


@register(name="keras-hub-sine-position-encoding", backend="tensorflow", library="keras-hub",
          requires=("keras_hub",), supports=LibrarySupports("keras-hub", Supports(
              layouts=("interleaved",), dtypes=("float16", "float32", "float64"), freq_shifts=(0,),
              odd=("extend",)), (_float64_is_float32, _positions_fit_dtype)))
def build_keras_hub_sine(spec: Spec):
    """SinePositionEncoding(max_wavelength=base, dtype)(x[1, length, d], start_index=offset)[0];
    x, read only for its shape, is made in the call (kept, bench would call it a lookup)."""
    import keras_hub
    import tensorflow as tf

    layer = keras_hub.layers.SinePositionEncoding(max_wavelength=spec.base, dtype=spec.dtype)
    shape, dtype, offset = (1, spec.length, spec.d_model), spec.dtype, spec.offset
    return lambda: layer(tf.zeros(shape, dtype=dtype), start_index=offset)[0]
