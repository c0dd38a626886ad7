"""The library implementations: who they name, and the findings docs/libraries.md records.

Each finding test asserts the library still behaves as recorded; when an upgrade fixes one, the
test fails and says which refusal in impls/libraries to lift.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import Spec, register
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
