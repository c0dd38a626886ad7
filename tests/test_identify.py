"""`python -m harness identify`: library tables (built by the loops of test_conventions, from the
formulas in docs/conventions.md) are identified with the right Spec fields; float16, bfloat16, a
batch axis, archives and CSV are read; permutations are named; no-match lists candidates; bad
input is one clear error line (exit 2)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from harness.cli import main as cli
from harness.core.reference import reference
from harness.core.spec import Spec
from harness.identify import from_array, identify
from tests.test_conventions import CASE_IDS, LIBRARY_CASES


def run(capsys, path, *extra) -> tuple[int, dict]:
    rc = cli(["identify", str(path), "--json", *extra])
    out = capsys.readouterr().out
    return rc, (json.loads(out) if out.strip() else {})


def save(tmp_path, table, name="table.npy"):
    path = tmp_path / name
    np.save(path, table)
    return path


def assert_spec(found: dict, spec: Spec) -> None:
    for field in ("length", "d_model", "layout", "offset", "cos_first"):
        assert found[field] == getattr(spec, field), field
    assert found["freq_shift"] == pytest.approx(spec.freq_shift)
    assert found["base"] == pytest.approx(spec.base, rel=1e-6)
    assert found["scale"] == pytest.approx(spec.scale, rel=1e-6)
    if spec.d_model % 2:
        assert found["odd"] == spec.odd


@pytest.mark.parametrize("name, loops, spec", LIBRARY_CASES, ids=CASE_IDS)
def test_library_tables_are_identified(tmp_path, capsys, name, loops, spec):
    rc, found = run(capsys, save(tmp_path, loops().astype(np.float32)))
    assert rc == 0 and found["match"] is True
    assert_spec(found, spec)
    assert found["dtype"] == "float32"
    assert found["max_abs_err"] < 1e-3 and found["err_ratio"] <= 1
    assert name in found["libraries"]


def test_fairseq_weight_dump_with_its_zero_padding_row(tmp_path, capsys):
    import harness.impls.library_conventions as lib

    weights = lib.fairseq_embedding(np.arange(0, 100), 32, padding_idx=1)
    rc, found = run(capsys, save(tmp_path, weights))
    assert rc == 0 and found["offset"] == 0 and found["freq_shift"] == 1
    assert any("rows 1 are all zeros" in note for note in found["notes"])


@pytest.mark.parametrize("spec", [
    Spec(300, 64, base=12345.678, dtype="float64"),
    Spec(32, 64, offset=10**9, dtype="float64"),
    Spec(64, 64, layout="concat", freq_shift=1, offset=1_000_000),
    Spec(200, 65, layout="concat", odd="extend", cos_first=True, dtype="float64"),
    Spec(200, 9, odd="pad", offset=3),
], ids=lambda s: s.short())
def test_non_default_bases_huge_offsets_odd_widths(tmp_path, capsys, spec):
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(spec.dtype)))
    assert rc == 0
    assert_spec(found, spec)


def test_two_rows_with_the_half_minus_one_schedule(tmp_path, capsys):
    spec = Spec(2, 64, layout="concat", freq_shift=1, offset=2)
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(np.float32)))
    assert rc == 0
    assert_spec(found, spec)


def test_angles_beyond_the_dtype_still_match_when_the_values_agree(tmp_path, capsys):
    spec = Spec(5, 190, base=100000.0, offset=10**6, scale=1000.0)   # float32 tolerance > 1
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(np.float32)))
    # float32 rounding (6e-8) plus float64's own rounding of an angle of 1e9 (ulp 1.2e-7)
    assert rc == 0 and found["max_abs_err"] < 2e-7
    assert_spec(found, spec)


@pytest.mark.parametrize("seed", range(3))
def test_round_conventions_are_recovered(seed):
    """Seeded specs with the parameters libraries use: the identified Spec gives the same table."""
    rng = np.random.default_rng(seed)
    for _ in range(8):
        d_model = int(rng.integers(4, 200))
        odd = str(rng.choice(["pad", "extend"])) if d_model % 2 else "error"
        spec = Spec(int(rng.choice([30, 300, 2000])), d_model,
                    base=float(rng.choice([10000.0, 500.0, 1000.0, 100000.0])),
                    layout=str(rng.choice(["interleaved", "concat"])),
                    freq_shift=float(rng.choice([0, 1, 0.5])), offset=int(rng.choice([0, 2, 100])),
                    dtype=str(rng.choice(["float32", "float64"])),
                    cos_first=bool(rng.random() < .3),
                    odd=odd, scale=float(rng.choice([1.0, 2.0])))
        found = identify(from_array(reference(spec).astype(spec.dtype)))
        assert found.matched, spec.short()
        assert np.abs(reference(found.best.spec) - reference(spec)).max() < 1e-4, spec.short()


def test_one_frequency_reports_defaults_with_a_note(tmp_path, capsys):
    rc, found = run(capsys, save(tmp_path, reference(Spec(10, 2)).astype(np.float32)))
    assert rc == 0 and found["freq_shift"] == 0 and found["base"] == 10000.0
    assert any("single frequency" in note for note in found["notes"])


def test_float16_table_matches_at_float16_tolerance(tmp_path, capsys):
    spec = Spec(512, 64, layout="concat", freq_shift=1, offset=2)
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(np.float16)))
    assert rc == 0 and found["dtype"] == "float16"
    assert_spec(found, spec)


def test_float16_prefers_the_closest_of_equally_likely_readings(tmp_path, capsys):
    """Base 500 / shift 0 and base 412 / shift 1 both fit a float16 table within tolerance;
    the true one is 50x closer and must win."""
    spec = Spec(300, 64, base=500.0, offset=2, dtype="float16")
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(np.float16)))
    assert rc == 0 and found["match"] is True
    assert_spec(found, spec)
    assert found["max_abs_err"] < 5e-4


def test_float16_values_in_a_float32_file_widen_the_tolerance(tmp_path, capsys):
    table = reference(Spec(256, 32)).astype(np.float16).astype(np.float32)
    rc, found = run(capsys, save(tmp_path, table))
    assert rc == 0 and found["dtype"] == "float32"
    assert any("float16 precision" in note for note in found["notes"])


def test_bfloat16_torch_file_with_a_batch_axis(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    spec = Spec(128, 32, layout="concat", freq_shift=1)
    path = tmp_path / "pe.pt"
    torch.save({"pe": torch.from_numpy(reference(spec)).to(torch.bfloat16)[None]}, path)
    rc, found = run(capsys, path)
    assert rc == 0 and found["dtype"] == "bfloat16"
    assert_spec(found, spec)


def test_batch_of_identical_tables(tmp_path, capsys):
    table = np.broadcast_to(reference(Spec(64, 16)).astype(np.float32), (4, 64, 16))
    rc, found = run(capsys, save(tmp_path, np.ascontiguousarray(table)))
    assert rc == 0 and found["length"] == 64
    assert any("4 identical copies" in note for note in found["notes"])


def test_npz_key_and_csv_with_header_and_index(tmp_path, capsys):
    import pandas as pd

    spec = Spec(50, 32, layout="concat")
    np.savez(tmp_path / "a.npz", first=np.zeros((3, 3)), pe=reference(spec).astype(np.float32))
    rc, found = run(capsys, tmp_path / "a.npz", "--key", "pe")
    assert rc == 0 and found["layout"] == "concat"
    pd.DataFrame(reference(spec).astype(np.float32)).to_csv(tmp_path / "t.csv")
    rc, found = run(capsys, tmp_path / "t.csv")
    assert rc == 0 and found["d_model"] == 32 and found["dtype"] == "float32"


# -- permutations and no match -----------------------------------------------------------

def _interleave_reorder(table):
    h = table.shape[1] // 2
    return table[:, np.stack([np.arange(h), h + np.arange(h)], axis=1).reshape(-1)]


@pytest.mark.parametrize("make, kind, layout", [
    (lambda: _interleave_reorder(reference(Spec(64, 16))),
     "interleaved table reordered as if it were concat", "interleaved"),
    (lambda: reference(Spec(64, 16, layout="concat", freq_shift=1))[
        :, np.r_[0:16:2, 1:16:2]], "concat table reordered as if it were interleaved", "concat"),
    (lambda: np.roll(reference(Spec(64, 16)), 8, axis=1), "two column halves swapped",
     "interleaved"),
    (lambda: reference(Spec(64, 16)).T.copy(), "transposed", "interleaved"),
    (lambda: reference(Spec(64, 16, layout="concat"))[::-1].copy(), "reverse order", "concat"),
], ids=["interleaved-as-concat", "concat-as-interleaved", "halves", "transposed", "rows"])
def test_permutations_are_named(tmp_path, capsys, make, kind, layout):
    rc, found = run(capsys, save(tmp_path, make()))
    assert rc == 1 and found["match"] is False
    assert kind in found["permutation"]
    assert found["layout"] == layout and found["max_abs_err"] < 1e-9


def test_reversed_frequency_order_is_a_spec_with_base_below_one(tmp_path, capsys):
    table = reference(Spec(64, 16)).reshape(64, 8, 2)[:, ::-1].reshape(64, 16)
    rc, found = run(capsys, save(tmp_path, table))
    assert rc == 0 and found["base"] == pytest.approx(1e-4)
    assert any("frequency order reversed" in note for note in found["notes"])


def test_no_match_lists_the_nearest_candidates(tmp_path, capsys):
    table = np.random.default_rng(0).uniform(-1, 1, (64, 16))
    rc, found = run(capsys, save(tmp_path, table))
    assert rc == 1 and found["match"] is False
    assert 1 <= len(found["nearest"]) <= 5
    errs = [c["max_abs_err"] for c in found["nearest"]]
    assert errs == sorted(errs) and errs[0] > 0.1
    rc = cli(["identify", str(tmp_path / "table.npy")])
    text = capsys.readouterr().out
    assert rc == 1 and "no match" in text and "Nearest candidates" in text


def test_near_miss_is_no_match_with_the_right_convention_nearest(tmp_path, capsys):
    table = reference(Spec(64, 16)).astype(np.float32)
    table[10, 3] += 0.05
    rc, found = run(capsys, save(tmp_path, table))
    assert rc == 1 and found["nearest"][0]["layout"] == "interleaved"
    assert found["nearest"][0]["max_abs_err"] == pytest.approx(0.05, rel=1e-3)


# -- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("table, message", [
    (np.full((4, 8), np.nan), "NaN/Inf"),
    (np.zeros((4, 8)), "all zeros"),
    (np.zeros(8), "must be \\[length, d_model\\]"),
    (np.stack([reference(Spec(8, 4)), reference(Spec(8, 4, offset=1))]), "different tables"),
    (np.arange(12, dtype=np.int64).reshape(3, 4), "dtype must be one of"),
], ids=["nan", "zeros", "1-D", "batch", "int"])
def test_bad_tables_are_one_line_errors(tmp_path, capsys, table, message):
    rc = cli(["identify", str(save(tmp_path, table))])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err)


def test_missing_file_and_unknown_suffix(tmp_path, capsys):
    assert cli(["identify", str(tmp_path / "nope.npy")]) == 2
    (tmp_path / "t.txt").write_text("1,2")
    assert cli(["identify", str(tmp_path / "t.txt")]) == 2
    assert "must end in one of" in capsys.readouterr().err


def test_a_big_table_is_identified_fast():
    spec = Spec(4096, 1024, layout="concat", freq_shift=1)
    table = from_array(reference(spec).astype(np.float32))
    start = time.perf_counter()
    found = identify(table)
    seconds = time.perf_counter() - start
    assert found.matched and found.best.spec.freq_shift == 1
    assert seconds < 3.0   # about 0.5 s here; generous for a shared machine
