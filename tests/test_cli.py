"""The `list` and `verify` verbs as a user runs them."""

from __future__ import annotations

import fnmatch
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from harness import implementations
from harness.cli import main
from harness.core.spec import SPEC_FIELDS


def test_list_shows_every_backend_and_availability(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for backend in ("python", "numpy", "numba", "tensorflow", "torch"):
        assert f" {backend} " in out
    assert "torch-cuda-stack" in out
    assert all(len(line) <= 100 for line in out.splitlines())       # fits a terminal
    unavailable = [line for line in out.splitlines() if " no (" in line]
    for line in unavailable:                      # each "no (N)" has its reason as note (N)
        note = line.split(" no (")[1].split(")")[0]
        assert f"\n({note}) " in out


def test_list_shows_each_rotary_apply_forms_as_letters(capsys):
    from harness import ApplyForms
    from harness.verbs.listing import form_letters

    assert form_letters(ApplyForms()) == "h----"
    assert form_letters(ApplyForms(layouts=("bshd",), gqa=True, in_place=True)) == "-sg-i"
    assert form_letters(None) == ""
    assert main(["list", "--only", "rotary-numba-*", "--only", "numpy-stack"]) == 0
    out = capsys.readouterr().out
    forms = {line.split()[0]: line.split()[5] for line in out.splitlines()[2:] if "rotary:apply" in line}
    assert forms["rotary-numba-apply-fused"] == "hsgb-" and forms["rotary-numba-apply-inplace"] == "hsgbi"
    stack = [line for line in out.splitlines() if line.startswith("numpy-stack ")][0]
    column = out.splitlines()[0].index("forms")
    assert stack[column:column + 5].strip() == ""                  # a table has no forms: blank
    assert "forms of rotary apply: h q, k heads first" in out


def test_a_mistyped_verb_or_an_unmatched_only_gets_a_did_you_mean(capsys):
    assert main(["bnech"]) == 2
    assert "unknown verb 'bnech'; did you mean bench?" in capsys.readouterr().err
    for verb in ("list", "bench", "conventions"):
        assert main([verb, "--only", "seed-numpy-stak"]) == 2
        err = capsys.readouterr().err
        assert "--only seed-numpy-stak: no implementation matches; did you mean seed-numpy-stack" in err


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
    from harness import implementations

    seeds = [i.name for i in implementations() if i.name.startswith("seed-")]
    assert len(seeds) >= 5 and all(name in done.stdout for name in seeds)


def test_every_verb_defaults_out_and_knows_when_it_was_given():
    import harness.cli as cli

    modules = cli._verb_modules()
    for verb in cli.VERBS:
        args = cli.parse(modules, [verb] + {"identify": ["x.npy"], "roofs": ["RUN"]}.get(verb, []))
        standalone = verb in ("verify", "conventions", "precision")
        expected = "results/_standalone" if standalone else "results"
        assert (args.out, args.out_given) == (expected, False), verb
    args = cli.parse(modules, ["report", "some-run", "--out", "elsewhere"])
    assert (args.out, args.out_given) == ("elsewhere", True)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_standalone_verify_writes_only_under_its_own_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "--quick", "--only", "numpy-stack", "--in-process"]) == 0
    assert (tmp_path / "results" / "_standalone" / "verify.csv").is_file()
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["_standalone"]
    assert "results/_standalone/" in build_help("verify")


def build_help(verb: str) -> str:
    import harness.cli as cli

    parser = cli.build_parser(cli._verb_modules())
    sub = next(a for a in parser._actions if a.dest == "verb").choices[verb]
    return sub.format_help()


@pytest.mark.parametrize("verb", ["verify", "bench", "conventions", "precision"])
def test_out_naming_a_file_is_one_line(verb, tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    assert main([verb, "--out", str(target), "--only", "numpy-stack"]) == 2
    assert "exists and is not a directory" in one_line_error(capsys)
    assert main([verb, "--out", str(target / "below"), "--only", "numpy-stack"]) == 2
    assert "is not a directory" in one_line_error(capsys)


def test_out_in_a_read_only_place_is_one_line(capsys):
    from harness.util.arguments import writable_dir

    try:
        writable_dir("/sys/pe-harness-out")
    except ValueError:
        pass
    else:
        pytest.skip("/sys is writable here")
    assert main(["verify", "--out", "/sys/pe-harness-out"]) == 2
    assert "cannot write in /sys" in one_line_error(capsys)


@pytest.mark.parametrize("argv, option", [
    (["verify", "--random", "-3"], "--random"),
    (["verify", "--timeout-s", "0"], "--timeout-s"),
    (["conventions", "--timeout-s", "-1"], "--timeout-s"),
    (["precision", "--timeout-s", "nan"], "--timeout-s"),
])
def test_bad_numbers_are_one_line_usage_errors(argv, option, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path), "--only", "numpy-stack", "--in-process"]) == 2
    assert option in one_line_error(capsys)


def test_a_plugin_whose_own_import_fails_says_which(tmp_path, capsys):
    plugin = tmp_path / "needs_more.py"
    plugin.write_text("import numpy\nimport pe_harness_no_such_dependency\n")
    assert main(["list", "--plugin", str(plugin)]) == 2
    err = one_line_error(capsys)
    assert "no such file" not in err and "failed to import" in err
    assert "pe_harness_no_such_dependency" in err and f"{plugin}:2" in err
    assert main(["list", "--plugin", "pe_harness_no_such_module"]) == 2
    assert "no such file or module" in one_line_error(capsys)


@pytest.mark.parametrize("bug", [RuntimeError, ValueError, KeyError])
def test_a_harness_bug_exits_3_not_1(bug, monkeypatch, capsys):
    """A plain ValueError is a bug too (issue 20): only UsageError is the user's input."""
    import harness.verbs.listing

    def broken(args, impls):
        raise bug("deliberate bug")

    monkeypatch.setattr(harness.verbs.listing, "main", broken)
    assert main(["list"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.splitlines()[-1].startswith(
        f"error: the harness itself failed ({bug.__name__}: ")


def test_bad_input_is_a_usage_error_that_is_still_a_value_error(tmp_path, capsys):
    from harness import Spec, UsageError

    assert isinstance(UsageError("x"), ValueError)
    with pytest.raises(UsageError, match="d_model must be even"):
        Spec(length=8, d_model=3)
    with pytest.raises(UsageError, match="length must be"):
        Spec(length=0, d_model=4)
    assert main(["bench", "--dry-run", "--d-models", "3", "--out", str(tmp_path)]) == 2
    assert "--d-models" in one_line_error(capsys)
    zeros = tmp_path / "zeros.npy"
    np.save(zeros, np.zeros((8, 4)))
    assert main(["identify", str(zeros)]) == 2               # a spec search over a bad table
    assert "all zeros" in one_line_error(capsys)
