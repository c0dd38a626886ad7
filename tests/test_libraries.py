"""The library implementations: who they name, and the findings docs/libraries.md records.

Each finding test asserts the library still behaves as recorded; when an upgrade fixes one, the
test fails and says which refusal in impls/libraries to lift.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, register
from harness.core.checks import check
from harness.core.kinds.grid import CONVENTIONS, GridSpec
from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import REGISTRY
from tests.test_libraries_pinned import LIBRARY_IMPLS, first_difference


def test_each_names_its_library_and_version():
    for impl in LIBRARY_IMPLS:
        assert impl.library, f"{impl.name} has no library="
        assert not impl.name.startswith("lib-"), impl.name
        if impl.available:
            assert impl.library_version, f"{impl.name}: {impl.library} has no installed version"


def test_first_difference_names_the_first_position_and_column():
    spec = Spec(8, 6)

    @register(name="test-libraries-perturbed", backend="numpy")
    def build(spec):
        from harness import reference

        def table():
            out = reference(spec).astype(np.float32)
            out[5, 3] += 0.5
            out[7, 0] += 1.0
            return out
        return table

    try:
        message = first_difference(REGISTRY.get("test-libraries-perturbed"), spec)
    finally:
        REGISTRY.remove("test-libraries-perturbed")
    assert message is not None and "(position, column) = (5, 3)" in message


def _available(name: str):
    impl = REGISTRY.get(name)
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    return impl


def test_keras_hub_float64_layer_is_only_float32_accurate():
    """Finding: SinePositionEncoding(dtype='float64') misses the float64 reference by ~1e-7."""
    impl = _available("keras-hub-sine-position-encoding")
    spec = Spec(128, 64, dtype="float64")
    assert impl.supports(spec) is not None
    from harness import reference

    out = np.asarray(impl.build(spec)())      # built despite the refusal, to measure it
    err = float(np.abs(out - reference(spec)).max())
    assert err > 1e-9, f"keras-hub float64 is now accurate ({err:.3g}): lift _float64_is_float32"


def test_positional_encodings_tf_ignores_its_dtype():
    """Finding: TFPositionalEncoding1D(dtype=tf.float16) still returns float32."""
    _available("positional-encodings-1d-tf")
    import tensorflow as tf
    from positional_encodings.tf_encodings import TFPositionalEncoding1D

    out = TFPositionalEncoding1D(8, dtype=tf.float16)(tf.zeros((1, 4, 8), tf.float16))
    assert out.dtype == tf.float32, "its dtype argument now works: allow float16 in its supports"


def test_gpt_neox_partial_rotary_factor_truncates():
    """Finding: partial_rotary_factor 26/92 gives int(92 * 26/92) = 25: 13 frequencies with the
    exponent 2k/25, a table no even rotary_dim has."""
    _available("transformers-gpt-neox-rope-cache")
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding

    config = GPTNeoXConfig(hidden_size=92, num_attention_heads=1,
                           rope_parameters={"rope_theta": 1e4, "partial_rotary_factor": 26 / 92})
    inv_freq = GPTNeoXRotaryEmbedding(config).inv_freq.double().numpy()
    assert inv_freq.shape == (13,)
    assert np.isclose(inv_freq[1], 1e4 ** (-2 / 25), rtol=1e-6)
    assert REGISTRY.get("transformers-gpt-neox-rope-cache").supports(
        RotarySpec(8, 92, rotary_dim=26)) is not None


@pytest.mark.parametrize("name, spec", [
    ("diffusers-2d-sincos", GridSpec((8, 8), 32, axis_order=(1, 0), dtype="float64")),
    ("diffusers-2d-sincos", GridSpec((8, 8), 32, axis_order=(1, 0), base_size=16, dtype="float64")),
    ("diffusers-2d-sincos", GridSpec((6, 10), 48, axis_order=(1, 0), base_size=6)),
    ("diffusers-2d-sincos", GridSpec((12, 20), 32, axis_order=(1, 0), extra=3, base_size=8,
                                     interpolation_scale=2.0, dtype="float16")),
    ("diffusers-3d-sincos", GridSpec((4, 6, 6), 48, split=(2, 3, 3), axis_order=(0, 2, 1),
                                     interpolation_scale=(2.0, 0.5, 0.5))),
    ("diffusers-3d-sincos", GridSpec((2, 3, 5), 32, **CONVENTIONS["diffusers-3d"], dtype="float64")),
    ("keras-hub-rope-apply", RotarySpec(40, 32, rope_type="yarn", factor=8.0, beta_fast=16.0, beta_slow=2.0,
                                        original_max_position_embeddings=16, truncate=False)),
    ("x-transformers-rope-apply", RotarySpec(50, 24, rotary_dim=12, layout="interleaved", offset=9,
                                             rope_type="linear", factor=2.0, dtype="bfloat16")),
    ("x-transformers-scaled-sinusoidal", Spec(40, 16, layout="concat", base=500.0, offset=3)),
])
def test_library_field_mappings(name, spec):
    """The fields the quick cases leave at their defaults: base_size, scales, cls rows, yarn's betas."""
    impl = _available(name)
    assert impl.supports(spec) is None, impl.supports(spec)
    result = check(impl, spec)
    assert result.status == "pass", result


@pytest.mark.parametrize("name, spec, why", [
    ("diffusers-2d-sincos", GridSpec((6, 10), 32, **CONVENTIONS["dit"]), "square grid"),
    ("diffusers-2d-sincos", GridSpec((6, 10), 32, axis_order=(1, 0), base_size=6,
                                     interpolation_scale=(1.0, 2.0)), "one interpolation_scale"),
    ("diffusers-2d-sincos", GridSpec((12, 12), 32, **CONVENTIONS["pixart-1024"], dtype="float64"),
     "float32"),
    ("diffusers-3d-sincos", GridSpec((2, 4, 4), 32, split=(2, 3, 3), axis_order=(0, 1, 2)), "t, x, y"),
    ("keras-hub-rope-apply", RotarySpec(8, 16, rope_type="yarn", factor=0.5,
                                        original_max_position_embeddings=16), "factor >= 1"),
    ("x-transformers-rope-apply", RotarySpec(8, 16, layout="interleaved", rope_type="linear", factor=0.5),
     "interpolation_factor >= 1"),
])
def test_library_refusals_name_why(name, spec, why):
    assert why in (REGISTRY.get(name).supports(spec) or "")


def test_keras_hub_yarn_scales_cos_below_factor_one():
    """Not mapped: keras-hub's yarn multiplies cos by 0.1 ln(factor) + 1 even for factor < 1,
    where transformers' (and the spec's) attention scaling is 1."""
    _available("keras-hub-rope-apply")
    import keras_hub

    layer = keras_hub.layers.RotaryEmbedding(scaling_factor=0.5, rope_type="yarn",
                                             original_max_position_embeddings=16)
    cos, _ = layer._compute_cos_sin_embedding(np.zeros((1, 1, 8), np.float32))
    assert np.isclose(float(np.asarray(cos)[0, 0, 0]), 0.1 * np.log(0.5) + 1, rtol=1e-5)
