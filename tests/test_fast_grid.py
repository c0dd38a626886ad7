"""The Numba grid in every dtype: per-axis tables rounded once, rows copied into place."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from harness import implementations, reference  # noqa: E402
from harness.core.convert import to_numpy  # noqa: E402
from harness.core.kinds.grid import CONVENTIONS, GridSpec  # noqa: E402

#: Half a unit in the last place of values in [0.5, 1), plus the float32 arithmetic before it.
BOUND = {"float64": 1e-15, "float32": 2.0 ** -23, "float16": 2.0 ** -12 + 1e-7,
         "bfloat16": 2.0 ** -9 + 1e-7}
SPECS = [GridSpec((5, 7), 32, extra=1),
         GridSpec((2, 3, 4), 48, **CONVENTIONS["diffusers-3d"]).replace(layout="interleaved", cos_first=True)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.short())
@pytest.mark.parametrize("dtype", sorted(BOUND))
@pytest.mark.parametrize("name", ["grid-numba", "grid-numba-recycled"])
def test_grid_numba_is_exact_in_every_dtype(name, dtype, spec):
    spec = spec.replace(dtype=dtype)
    impl = next(i for i in implementations() if i.name == name)
    call = impl.build(spec)
    first, second = call(), call()   # the second while the first is held: other memory
    out = to_numpy(second).astype(np.float64)
    assert out.shape == (spec.rows, spec.d_model)
    assert np.abs(out - reference(spec)).max() <= BOUND[dtype]
    assert np.array_equal(to_numpy(first).astype(np.float64), out)
    assert np.all(out[:spec.extra] == 0)
