"""The float32 sincos with a float64 reduction, the Numba timestep kernel in every dtype, and
the compute roof beside it (its values, and which roof binds in bench.csv)."""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from harness import implementations, reference  # noqa: E402
from harness.bench.cells import Cell, Outcome, row  # noqa: E402
from harness.bench.roofs import ROOF_REGISTRY  # noqa: E402
from harness.core.convert import to_numpy  # noqa: E402
from harness.core.kinds.timestep import TimestepSpec  # noqa: E402
from harness.core.kinds.timestep.reference import angles  # noqa: E402
from harness.runs import results  # noqa: E402

implementations()   # loads the built-ins under harness.impls
from harness.impls._numba_sincos import sincos  # noqa: E402

ULP32 = 2.0 ** -23


@pytest.fixture(scope="module")
def sincos_array():
    kernel = sincos()

    @numba.njit
    def apply(x, s, c):
        for i in range(x.size):
            s[i], c[i] = kernel(x[i])

    def run(x):
        s, c = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
        apply(x, s, c)
        return s, c

    return run


def test_sincos_is_float32_accurate_at_every_quadrant_and_large_angles(sincos_array):
    rng = np.random.default_rng(3)
    quadrants = np.arange(-4000, 4000) * (np.pi / 4)          # reduction edges, both signs
    x = np.concatenate([rng.uniform(-1e5, 1e5, 20000), quadrants, quadrants + 1e-9, [0.0, -0.0]])
    s, c = sincos_array(x)
    assert np.abs(s - np.sin(x)).max() <= 1.5 * ULP32
    assert np.abs(c - np.cos(x)).max() <= 1.5 * ULP32


@pytest.mark.parametrize("name", ["timestep-numba", "timestep-numba-recycled"])
@pytest.mark.parametrize(("dtype", "bound"), [("float32", 2 * ULP32), ("float16", 2.0 ** -12 + 1e-7),
                                              ("bfloat16", 2.0 ** -9 + 1e-7)])
def test_timestep_numba_rounds_once_to_every_dtype(name, dtype, bound):
    """Half a unit in the last place of the output dtype (plus the float32 error) at t up to
    1000 with an odd width, cos first: the exact grade."""
    spec = TimestepSpec.random(33, 11, dtype=dtype, cos_first=True)
    impl = next(i for i in implementations() if i.name == name)
    out = to_numpy(impl.build(spec)()).astype(np.float64)
    assert out.shape == (33, 11)
    assert np.abs(out - reference(spec)).max() <= bound
    assert np.all(out[:, -1] == 0)


def test_sincos_roof_writes_the_sines_and_cosines():
    spec = TimestepSpec.uniform(16, 9)
    out = ROOF_REGISTRY.get("roof-sincos-timestep").build(spec)()
    theta = angles(spec).astype(np.float32)
    flat = out.reshape(-1)
    np.testing.assert_allclose(flat[:64], np.sin(theta).reshape(-1), atol=1e-6)
    np.testing.assert_allclose(flat[64:128], np.cos(theta).reshape(-1), atol=1e-6)
    assert np.all(flat[128:] == 0)


def _cell(impl: str, is_roof: bool = False) -> Cell:
    return Cell(impl, "numpy", "cpu", "timestep", "adm", 64, 64, "float32", 1, is_roof=is_roof, kind="timestep")


def test_the_binding_roof_is_the_slowest_limit_met_the_fastest_way():
    rows = [row(_cell(name, True), Outcome("ok", median_s=t, iqr_s=t / 100))
            for name, t in (("roof-recycled-fill-timestep", 1e-3), ("roof-numpy-fill-timestep", 2e-3),
                            ("roof-sincos-timestep", 8e-3), ("roof-sincos-torch-timestep", 6e-3))]
    rows.append(row(_cell("timestep-numba"), Outcome("ok", median_s=3e-3, iqr_s=3e-5)))
    df = results.tidy(rows, "run", "machine").set_index("impl")
    assert df.loc["timestep-numba", "roof_s"] == pytest.approx(6e-3)
    assert df.loc["timestep-numba", "roof_bound"] == "compute"
    assert df.loc["timestep-numba", "roof_ratio"] == pytest.approx(0.5)
    memory_only = results.tidy(rows[:2] + rows[4:], "run", "machine").set_index("impl")
    assert memory_only.loc["timestep-numba", "roof_bound"] == "memory"
    assert memory_only.loc["timestep-numba", "roof_s"] == pytest.approx(1e-3)
