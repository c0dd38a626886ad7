"""Properties of every table, for random specs: identities that no convention may break."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from harness import Spec, reference, to_numpy
from harness.core.registry import REGISTRY
from tests import oracle

SPECS = st.builds(
    Spec,
    length=st.integers(1, 300),
    d_model=st.integers(2, 64).map(lambda d: d + d % 2),
    base=st.sampled_from([10000.0, 500.0, 1e5]),
    layout=st.sampled_from(["interleaved", "concat"]),
    freq_shift=st.just(0),
    offset=st.integers(0, 5000),
    dtype=st.sampled_from(["float32", "float64"]),
    cos_first=st.booleans(),
)


def columns(spec: Spec, fn: str) -> list[int]:
    """The columns of function `fn` ("sin", "cos"), in frequency order, by the oracle's placement."""
    found = sorted((k, c) for c, (f, k) in enumerate(oracle.column_roles(spec)) if f == fn)
    return [c for _, c in found]


def pairs(table: np.ndarray, spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    return table[:, columns(spec, oracle.SIN)], table[:, columns(spec, oracle.COS)]


@given(SPECS)
def test_sin2_plus_cos2_is_one_for_every_pair(spec):
    for name in ("numpy-stack" if spec.layout == "interleaved" else "numpy-cat", "torch-stack"
                 if spec.layout == "interleaved" else "torch-cat", "numba-direct"):
        table = to_numpy(REGISTRY.get(name).build(spec)()).astype(np.float64)
        a, b = pairs(table, spec)
        eps = np.finfo(spec.dtype).eps
        np.testing.assert_allclose(a**2 + b**2, 1.0, atol=8 * eps, err_msg=name)


@given(SPECS)
def test_layouts_are_column_permutations_of_one_another(spec):
    inter = reference(spec.replace(layout="interleaved"))
    concat = reference(spec.replace(layout="concat"))
    h = spec.d_model // 2
    perm = np.ravel(np.column_stack([np.arange(h), h + np.arange(h)]))
    np.testing.assert_array_equal(concat[:, perm], inter)


@given(SPECS)
def test_row_zero_at_offset_zero_is_sin0_cos0(spec):
    spec = spec.replace(offset=0)
    row = reference(spec)[0]
    assert np.all(row[columns(spec, oracle.SIN)] == 0) and np.all(row[columns(spec, oracle.COS)] == 1)
    for name in ("seed-numpy-stack", "seed-torch-stack", "seed-python-loops"):
        plain = Spec(spec.length, spec.d_model, dtype=spec.dtype)
        out = to_numpy(REGISTRY.get(name).build(plain)())[0]
        np.testing.assert_array_equal(out, np.tile([0.0, 1.0], spec.d_model // 2))
