"""identify, issue 10 item 9: a big table is fitted on a sample and confirmed on every row in
chunks, so identifying it costs little more memory than the file itself (a 1.6 GB float32 table
peaked at 12.9 GB before); a file that cannot fit in memory is one clear error, not swapping.

A ~34 MB table stands in for the 1.6 GB one: peak memory is measured with tracemalloc (which
sees NumPy's allocations) relative to the file's size.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import tracemalloc

import numpy as np
import pytest

from harness.cli import main as cli
from harness.core.reference import reference
from harness.core.spec import Spec
from harness.util import memory

#: 34.4 MB in float32; its float64 reference (68.8 MB) is above the size a Spec checks memory for.
SPEC = Spec(4200, 2048, layout="concat", freq_shift=1)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    where = tmp_path_factory.mktemp("big")
    table = np.empty((SPEC.length, SPEC.d_model), dtype=np.float32)
    for start in range(0, SPEC.length, 1000):
        part = SPEC.replace(length=min(1000, SPEC.length - start), offset=start)
        table[start:start + part.length] = reference(part)
    np.save(where / "pe.npy", table)
    np.savez(where / "pe.npz", inv_freq=np.ones(SPEC.d_model // 2), pe=table)
    # Import everything identify uses (the registry's backends) before memory is traced.
    np.save(where / "small.npy", table[:8, :8])
    with contextlib.redirect_stdout(io.StringIO()):
        cli(["identify", str(where / "small.npy")])
    return where


def identify_peak(capsys, path) -> tuple[int, dict, int, float]:
    """Exit code, JSON answer, tracemalloc peak (bytes) and seconds of one `identify --json`."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        rc = cli(["identify", str(path), "--json"])
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return rc, json.loads(capsys.readouterr().out), peak, seconds


@pytest.mark.parametrize("name", ["pe.npz", "pe.npy"])
def test_peak_memory_stays_under_twice_the_file(files, capsys, name):
    path = files / name
    rc, found, peak, seconds = identify_peak(capsys, path)
    assert rc == 0 and found["match"] is True
    assert (found["length"], found["d_model"], found["freq_shift"]) == (4200, 2048, 1)
    table_bytes = SPEC.length * SPEC.d_model * 4
    assert peak < 2 * table_bytes, f"peak {peak / 1e6:.0f} MB for a {table_bytes / 1e6:.0f} MB table"
    assert seconds < 5.0        # about 0.2 s here (a 1.6 GB table: about 3 s)


def test_a_file_that_cannot_fit_in_memory_is_one_clear_error(files, capsys, monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 16 << 20)
    assert cli(["identify", str(files / "pe.npz"), "--key", "pe"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pe.npz" in err
    assert "memory" in err and "16.0 MiB is available" in err


def test_a_spec_too_big_for_memory_is_named_not_a_silent_no_match(files, capsys, monkeypatch):
    """A memory-mapped .npy needs no memory of its own, but a Spec of its size is refused
    here: say so, instead of skipping every candidate and reporting no match."""
    monkeypatch.setattr(memory, "available_bytes", lambda: 16 << 20)
    assert cli(["identify", str(files / "pe.npy")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pe.npy" in err and "memory" in err
