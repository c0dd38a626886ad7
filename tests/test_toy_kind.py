"""A kind from one folder (tests/toy_kind/toykind: the Kind with two workloads, a plugin with
their implementations, its precision study) goes through the verbs with no other file touched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def harness(tmp_path: Path, *args: str, plugin: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PE_HARNESS_KINDS": "toykind.kind", "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join([str(HERE / "toy_kind"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    given = ["--plugin", "toykind.impls", "--only", "*s-numpy"] if plugin else []
    return subprocess.run([sys.executable, "-m", "harness", *args, *given, "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=240)


@pytest.mark.e2e
def test_list_verify_and_conventions_take_a_new_kind_from_one_folder(tmp_path):
    listed = harness(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:3] for line in listed.stdout.splitlines() if line.strip()]
    # `list` names a workload after its kind ("squares") or as kind:workload ("squares:cubes")
    assert ["squares-numpy", "squares", "numpy"] in rows
    assert ["cubes-numpy", "squares:cubes", "numpy"] in rows
    verified = harness(tmp_path, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    rows = (tmp_path / "verify.csv").read_text()
    assert rows.count("squares-numpy") == 2 and rows.count("cubes-numpy") == 2 and ",fail," not in rows
    conventions = harness(tmp_path, "conventions")
    assert conventions.returncode == 0, conventions.stderr
    assert "cubes-numpy" in (tmp_path / "conventions.md").read_text()


def test_identify_names_a_kind_it_has_no_reader_for(tmp_path):
    np.save(tmp_path / "squares.npy", np.arange(10.0) ** 2)
    done = harness(tmp_path, "identify", str(tmp_path / "squares.npy"), "--kind", "squares")
    assert done.returncode == 2 and "identify has no reader for that kind" in done.stderr


@pytest.mark.e2e
def test_bench_report_and_precision_take_a_new_kind_from_one_folder(tmp_path):
    timed = harness(tmp_path, "bench", "--quick", "--no-post", "--lengths", "8", "--d-models", "2",
                    "--dtypes", "float64", "--threads", "1", "--max-time", "0.01")
    assert timed.returncode == 0, timed.stdout + timed.stderr
    (run,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    cells = pd.read_csv(run / "bench.csv")
    timed = {(impl, work) for impl, work, status in zip(cells.impl, cells.workload, cells.status) if status == "ok"}
    for impl, work in (("squares-numpy", "squares"), ("cubes-numpy", "cubes"),
                       ("roof-numpy-fill-squares", "squares"), ("roof-numpy-fill-cubes", "cubes")):
        assert (impl, work) in timed, cells[["impl", "workload", "status", "reason"]]   # each beside its own roof
    reported = harness(tmp_path, "report", str(run))        # written to --out
    assert reported.returncode == 0, reported.stderr
    report = (tmp_path / "report.md").read_text()
    assert "squares-numpy" in report and "cubes-numpy" in report
    studied = harness(tmp_path, "precision", "--kind", "squares", "--quick", plugin=False)
    assert studied.returncode == 0, studied.stderr
    assert "## Toy squares" in (tmp_path / "precision.md").read_text()
    assert set(pd.read_csv(tmp_path / "precision.csv").kind) == {"squares"}
