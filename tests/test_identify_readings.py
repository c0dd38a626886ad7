"""identify, issue 10 item 8: among readings of the same table (base and freq_shift trade against
each other exactly), the simplest wins - fewest digits of the base, then the usual shifts - and
the others that reproduce the table are printed too (`alternatives` in --json).

The tables are computed in float32 the way the libraries do it (angles and frequencies in
float32): that rounding is what let a 4-digit base with shift 0 come out closer than the true one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli import main as cli


def whisper_sinusoids(length: int, channels: int, max_timescale: float) -> np.ndarray:
    """openai-whisper's `sinusoids` in float32 (torch.exp / arange / sin, cos are float32)."""
    increment = np.float32(np.log(max_timescale) / (channels // 2 - 1))
    inv = np.exp(-increment * np.arange(channels // 2, dtype=np.float32))
    scaled = np.arange(length, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)


def rounded_up_to_even(length: int, d_model: int) -> np.ndarray:
    """An odd width built as the next even one (denominator d/2 + 1/2), last column dropped."""
    even = d_model + 1
    k = np.arange(even // 2, dtype=np.float32)
    inv = np.exp(k * np.float32(-np.log(10000.0) / (even / 2)))
    theta = np.arange(length, dtype=np.float32)[:, None] * inv[None, :]
    return np.stack([np.sin(theta), np.cos(theta)], axis=2).reshape(length, even)[:, :d_model]


def identify_json(tmp_path, capsys, table) -> tuple[int, dict]:
    path = tmp_path / "table.npy"
    np.save(path, table)
    rc = cli(["identify", str(path), "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("length", [448, 1500])
def test_whisper_base_5000_is_read_as_shift_1_with_the_shift_0_reading_beside_it(
        tmp_path, capsys, length):
    rc, found = identify_json(tmp_path, capsys, whisper_sinusoids(length, 64, 5000))
    assert rc == 0 and found["match"] is True
    assert (found["layout"], found["freq_shift"], found["base"]) == ("concat", 1, 5000.0)
    assert "lib-whisper" in found["libraries"]
    other = [(a["freq_shift"], a["base"]) for a in found["alternatives"]]
    assert (0, 6581.0) in other       # 5000 ** (32 / 31) = 6581.0: the same table
    assert all(a["err_ratio"] <= 1 for a in found["alternatives"])


def test_text_output_prints_both_readings(tmp_path, capsys):
    path = tmp_path / "whisper.npy"
    np.save(path, whisper_sinusoids(1500, 64, 5000))
    assert cli(["identify", str(path)]) == 0
    text = capsys.readouterr().out
    match, rest = text.split("the same table within tolerance, read another way:")
    assert "base=5000.0" in match and "freq_shift=1" in match
    assert "base=6581.0" in rest and "freq_shift=0" in rest


@pytest.mark.parametrize("d_model", [33, 129])
def test_width_rounded_up_to_even_is_base_10000_with_a_half_shift(tmp_path, capsys, d_model):
    rc, found = identify_json(tmp_path, capsys, rounded_up_to_even(512, d_model))
    assert rc == 0
    assert (found["base"], found["freq_shift"], found["odd"]) == (10000.0, -0.5, "extend")
    assert any(a["freq_shift"] == 0 for a in found["alternatives"])


def test_a_plain_table_has_no_alternatives(tmp_path, capsys):
    from harness.core.reference import reference
    from harness.core.spec import Spec

    rc, found = identify_json(tmp_path, capsys, reference(Spec(300, 64)).astype(np.float32))
    assert rc == 0 and found["alternatives"] == []


def test_simplicity_orders_digits_then_shifts():
    from harness.identify.law import Law, significant_digits

    assert significant_digits(5000.0) == 1 and significant_digits(6581.0) == 4
    assert significant_digits(1e-4) == 1 and significant_digits(12345.678) == 8
    whisper, four_digits = Law(5000.0, 1, 1.0, 1), Law(6581.0, 0, 1.0, 1)
    half_shift, odd_base = Law(10000.0, -0.5, 1.0, 2), Law(7627.0, 0, 1.0, 1)
    assert whisper.simplicity < four_digits.simplicity
    assert half_shift.simplicity < odd_base.simplicity
    assert Law(10000.0, 0, 1.0, 0).simplicity < Law(10000.0, 1, 1.0, 1).simplicity
    assert Law(500.0, 0, 1.0, 1).simplicity < Law(500.0, 0.5, 1.0, 2).simplicity
