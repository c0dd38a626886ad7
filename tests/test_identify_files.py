"""identify, issue 10 item 10: files as people have them. Every array of an archive or state dict
is identified (a 1-D buffer first does not stop the scan); a table stored with an amplitude is
found with it; the PyTorch tutorial's `[max_len, 1, d]` buffer is one table; a single row is
said to be undetermined; a directory is named as one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli import main as cli
from harness.core.reference import reference
from harness.core.spec import Spec

PE = Spec(200, 64, layout="concat")


def run(capsys, path, *extra) -> tuple[int, dict]:
    rc = cli(["identify", str(path), "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def table(spec: Spec = PE) -> np.ndarray:
    return reference(spec).astype(np.float32)


def test_every_array_of_an_npz_is_reported_and_a_1d_first_entry_does_not_stop_the_scan(
        tmp_path, capsys):
    noise = np.random.default_rng(0).normal(size=(20, 16)).astype(np.float32)
    np.savez(tmp_path / "a.npz", inv_freq=np.ones(32), weight=noise, pe=table())
    rc, found = run(capsys, tmp_path / "a.npz")
    assert rc == 0 and found["match"] is True and found["key"] == "pe"
    assert found["layout"] == "concat" and found["length"] == 200
    entries = {e["key"]: e for e in found["entries"]}
    assert list(entries) == ["inv_freq", "weight", "pe"]
    assert "[length, d_model]" in entries["inv_freq"]["error"]
    assert entries["weight"]["match"] is False
    assert any("not a sinusoidal table" in note for note in entries["weight"]["notes"])
    assert entries["pe"]["match"] is True
    assert cli(["identify", str(tmp_path / "a.npz")]) == 0
    text = capsys.readouterr().out
    assert "holds 3 arrays" in text and "== inv_freq ==" in text and "== pe ==" in text


def test_an_archive_without_any_table_is_one_error(tmp_path, capsys):
    np.savez(tmp_path / "b.npz", a=np.ones(8), b=np.zeros((4, 4)))
    assert cli(["identify", str(tmp_path / "b.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds no table" in err and "all zeros" in err


def test_a_state_dict_with_nested_dicts_and_the_tutorials_max_len_1_d_buffer(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    state = {"model": {"rotary.inv_freq": torch.ones(32), "step": 3,
                       "pos_encoder.pe": torch.from_numpy(table())[:, None, :]}}
    torch.save(state, tmp_path / "ckpt.pt")
    rc, found = run(capsys, tmp_path / "ckpt.pt")
    assert rc == 0 and found["key"] == "model.pos_encoder.pe"
    assert (found["length"], found["d_model"], found["layout"]) == (200, 64, "concat")
    assert [e["key"] for e in found["entries"]] == ["model.rotary.inv_freq",
                                                     "model.pos_encoder.pe"]
    rc, found = run(capsys, tmp_path / "ckpt.pt", "--key", "model.pos_encoder.pe")
    assert rc == 0 and "entries" not in found


def test_a_max_len_1_d_array_is_one_table(tmp_path, capsys):
    np.save(tmp_path / "pe.npy", table()[:, None, :])
    rc, found = run(capsys, tmp_path / "pe.npy")
    assert rc == 0 and found["length"] == 200 and found["d_model"] == 64


@pytest.mark.parametrize("amplitude, expression, layout", [
    (64 ** -0.5, "d_model ** -0.5", "concat"),      # x-transformers ScaledSinusoidalEmbedding
    (64 ** 0.5, "sqrt(d_model)", "interleaved"),     # pe * sqrt(d_model)
    (0.3712345, "measured", "interleaved"),
])
def test_a_table_stored_with_an_amplitude_is_found_with_it(tmp_path, capsys, amplitude,
                                                           expression, layout):
    spec = Spec(300, 64, layout=layout, freq_shift=1, offset=2)
    np.save(tmp_path / "t.npy", (reference(spec) * amplitude).astype(np.float32))
    rc, found = run(capsys, tmp_path / "t.npy")
    assert rc == 0 and found["match"] is True
    assert (found["layout"], found["freq_shift"], found["offset"]) == (layout, 1, 2)
    assert found["amplitude"] == pytest.approx(amplitude, rel=1e-6)
    assert found["amplitude_expression"] == expression
    assert any("amplitude" in note for note in found["notes"])


def test_an_unscaled_table_has_amplitude_1(tmp_path, capsys):
    np.save(tmp_path / "t.npy", reference(Spec(256, 32)).astype(np.float16))
    rc, found = run(capsys, tmp_path / "t.npy")
    assert rc == 0 and found["amplitude"] == 1.0 and found["amplitude_expression"] == "1"


def test_a_single_row_cannot_determine_the_spec(tmp_path, capsys):
    np.save(tmp_path / "row.npy", table(Spec(1, 64, offset=7)))
    rc, found = run(capsys, tmp_path / "row.npy")
    assert rc == 1 and found["match"] is False
    assert "single row" in found["undetermined"] and found["libraries"] == []
    assert cli(["identify", str(tmp_path / "row.npy")]) == 1
    text = capsys.readouterr().out
    assert "undetermined" in text and "cannot determine" in text and "match:" not in text


def test_a_directory_is_named_as_one(tmp_path, capsys):
    assert cli(["identify", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "does not exist" not in err


def test_a_harness_bug_in_the_scan_is_exit_3_with_its_traceback_not_a_bad_entry(
        tmp_path, capsys, monkeypatch):
    """A plain ValueError raised while identifying an entry is the harness's, not the file's:
    the scan must not turn it into that entry's reason (exit 2 or a 'not a table' line)."""
    from harness.identify import command

    def broken(table, nearest=True):
        raise ValueError("operands could not be broadcast together")

    np.savez(tmp_path / "c.npz", inv_freq=np.ones(32), pe=table())
    monkeypatch.setattr(command, "identify", broken)
    assert cli(["identify", str(tmp_path / "c.npz")]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "could not be broadcast" in err
    assert "the harness itself failed" in err.strip().splitlines()[-1]
