"""The `list` and `verify` verbs as a user runs them."""

from __future__ import annotations

import fnmatch
import subprocess
import sys

import pandas as pd

from harness import implementations
from harness.cli import main
from harness.spec import SPEC_FIELDS


def test_list_shows_every_backend_and_availability(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for backend in ("python", "numpy", "numba", "tensorflow", "torch"):
        assert f" {backend} " in out
    assert "torch-cuda-stack" in out and ("no: no CUDA" in out or "yes" in out)


def test_verify_writes_csv_and_markdown(tmp_path, capsys):
    code = main(["verify", "--quick", "--only", "numpy-*", "--out", str(tmp_path)])
    assert code == 0
    frame = pd.read_csv(tmp_path / "verify.csv")
    expected = {"impl", "backend", "device", *SPEC_FIELDS, "max_abs_err", "tol", "status", "reason"}
    assert expected <= set(frame.columns)
    expected_impls = {i.name for i in implementations() if fnmatch.fnmatch(i.name, "numpy-*")}
    assert {"numpy-stack", "numpy-cat", "numpy-forward"} <= set(frame["impl"]) == expected_impls
    assert set(frame["status"]) <= {"pass", "skip"}
    assert "| numpy-stack |" in (tmp_path / "verify.md").read_text()
    assert "all implementations pass" in capsys.readouterr().out


def test_only_matching_nothing_is_a_clear_error(tmp_path, capsys):
    assert main(["verify", "--only", "nothing-like-this", "--out", str(tmp_path)]) == 2
    assert "no implementation matches" in capsys.readouterr().err


def test_module_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "harness", "list", "--only", "seed-*"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("seed-") == 5


def test_every_verb_defaults_out_to_results_and_knows_when_it_was_given():
    import harness.cli as cli

    modules = cli._verb_modules()
    for verb in cli.VERBS:
        args = cli.parse(modules, [verb] + (["x.npy"] if verb == "identify" else []))
        assert (args.out, args.out_given) == ("results", False), verb
    args = cli.parse(modules, ["report", "some-run", "--out", "elsewhere"])
    assert (args.out, args.out_given) == ("elsewhere", True)
