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


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_grid_numba_streamed_and_cached_rows_are_the_same_bits(dtype, monkeypatch):
    """The row copy (impls/grid/_copy.py) streams whole 32-byte vectors into aligned blocks and
    copies the rest (odd block widths, `extra` rows) by memcpy: both give the same exact grid."""
    from harness.impls.grid import numba as grid_numba

    impl = next(i for i in implementations() if i.name == "grid-numba")
    for spec in (GridSpec((5, 7), 52, dtype=dtype, extra=2),   # blocks of 26 columns: some unaligned
                 GridSpec((4, 6), 64, dtype=dtype)):           # blocks of 32 columns: all streamed
        held = impl.build(spec)()   # held: the streamed grid cannot reuse its memory
        cached = to_numpy(held).astype(np.float64)
        monkeypatch.setattr(grid_numba, "STREAM_BYTES", 0)
        streamed = to_numpy(impl.build(spec)()).astype(np.float64)
        monkeypatch.undo()
        assert np.array_equal(streamed, cached)
        assert np.abs(streamed - reference(spec)).max() <= BOUND[dtype]


@pytest.mark.parametrize("runs_per_thread", [2, 5])
def test_grid_numba_runs_cut_anywhere_compute_the_rows_they_need(runs_per_thread, monkeypatch):
    """Each run computes only the axis-table rows its (t, y) units touch, into its own scratch:
    runs that start or end inside a frame, or span frames, still write the exact grid."""
    from harness.impls.grid import numba as grid_numba

    monkeypatch.setattr(grid_numba, "RUNS_PER_THREAD", runs_per_thread)
    impl = next(i for i in implementations() if i.name == "grid-numba")
    for spec in (GridSpec((5, 7), 32, extra=1), GridSpec((3, 4, 5), 48, **CONVENTIONS["diffusers-3d"])):
        out = to_numpy(impl.build(spec)()).astype(np.float64)
        assert np.abs(out - reference(spec)).max() <= BOUND["float32"]


#: Axes longer than the angle-addition tables' FINE rows (impls/grid/numba.py), so rows come from
#: several coarse rows; a start offset, a non-integer step (base_size) and normalized coords.
LONG_AXES = [GridSpec((37, 20), 64, extra=1), GridSpec((3, 18, 33), 48, **CONVENTIONS["diffusers-3d"]),
             GridSpec((40, 17), 32, coords="normalized", start=1.0, norm_eps=1e-6),
             GridSpec((21, 35), 32, base_size=16, interpolation_scale=(2.0, 0.5))]


@pytest.mark.parametrize("spec", LONG_AXES, ids=lambda s: s.short())
def test_grid_numba_float32_axis_rows_are_correctly_rounded(spec):
    """A float32 grid's axis rows are a float64 angle addition rounded once: within half a
    float32 ulp of the float64 reference (plus float64 noise), at every coarse step."""
    impl = next(i for i in implementations() if i.name == "grid-numba")
    out = to_numpy(impl.build(spec)()).astype(np.float64)
    ref = reference(spec)
    half_ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64) / 2
    assert np.all(np.abs(out - ref) <= half_ulp + 1e-12)


@pytest.mark.parametrize("spec", LONG_AXES, ids=lambda s: s.short())
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grid_numba_half_rows_are_rounded_once_from_float32(spec, dtype):
    """A half grid is the float32 angle addition (error ~2e-7) rounded once: within half an ulp
    of the half dtype at the reference value, plus the float32 arithmetic, at every coarse step."""
    spec = spec.replace(dtype=dtype)
    impl = next(i for i in implementations() if i.name == "grid-numba")
    out = np.asarray(to_numpy(impl.build(spec)()), np.float64)
    ref = reference(spec)
    single = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp = np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64) if dtype == "float16" else single * 2 ** 16
    assert np.all(np.abs(out - ref) <= ulp / 2 + 2.5e-7)
