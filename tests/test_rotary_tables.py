"""The rotary angle-addition tables (impls/rotary/_tables.py): any step rebuilds every position."""

import numpy as np
import pytest

from harness.core.kinds.rotary import RotarySpec
from harness.impls.rotary._tables import split_tables


@pytest.mark.parametrize("step", [None, 1, 16, 1000])
def test_split_tables_rebuild_every_position(step):
    spec = RotarySpec(300, head_dim=16, offset=2, rope_type="linear", factor=2.0)
    t = split_tables(spec, step)
    p = np.arange(spec.length)
    q, r = p // t.step, p % t.step
    cos = t.cos_coarse[q] * t.cos_fine[r] - t.sin_coarse[q] * t.sin_fine[r]
    sin = t.sin_coarse[q] * t.cos_fine[r] + t.cos_coarse[q] * t.sin_fine[r]
    angle = (p + spec.offset)[:, None] * spec.inv_freq()[None, :]
    scale = spec.attention_scaling
    np.testing.assert_allclose(cos, scale * np.cos(angle), atol=1e-13)
    np.testing.assert_allclose(sin, scale * np.sin(angle), atol=1e-13)


def test_split_tables_step_must_be_positive():
    with pytest.raises(ValueError, match="step must be >= 1"):
        split_tables(RotarySpec(8, head_dim=4), 0)
