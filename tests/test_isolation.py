"""A plugin that kills its process costs only its own rows, in every verb that calls implementations.

The plugins are files under tmp_path, loaded with --plugin as a user would;
the verbs run in this process and isolate the implementations in child
processes (one per backend), so the crashes below never reach pytest.
"""

from __future__ import annotations

import argparse
import math

import pandas as pd
import pytest

from harness import load_plugin
from harness.cli import main
from harness.core import isolate
from harness.core.cases import default_cases
from harness.core.registry import REGISTRY
from harness.verbs import conventions as convention_matrix, verify
from harness.verbs.precision import table as precision

CRASHY = '''
import ctypes, os
from harness import Spec, Supports, reference, register

ONE = Supports(layouts=("interleaved",), freq_shifts=(0,), dtypes=("float32",))

@register(name="cr-exit", backend="numpy", supports=ONE)
def build_exit(spec: Spec):
    def table():
        os._exit(3)
    return table

@register(name="cr-segv", backend="numpy", supports=ONE)
def build_segv(spec: Spec):
    def table():
        ctypes.string_at(0)
    return table

@register(name="cr-ok", backend="numpy", supports=ONE)
def build_ok(spec: Spec):
    return lambda: reference(spec).astype("float32")
'''
NAMES = ("cr-exit", "cr-segv", "cr-ok")


@pytest.fixture
def crashy(tmp_path):
    """The plugin's path; its implementations leave this process's registry afterwards."""
    path = tmp_path / "crashy.py"
    path.write_text(CRASHY)
    yield str(path)
    for name in NAMES:
        REGISTRY.remove(name)


def test_verify_records_crashes_as_errors_and_exits_1(crashy, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["verify", "--quick", "--plugin", crashy, "--only", "cr-*", "--out", str(out)]) == 1
    assert "FAILED: cr-exit, cr-segv" in capsys.readouterr().out
    df = pd.read_csv(out / "verify.csv", keep_default_na=False)
    assert list(dict.fromkeys(df["impl"])) == ["cr-exit", "cr-ok", "cr-segv"]   # the order of `list`
    ok = df[df["impl"] == "cr-ok"]
    assert set(ok["status"]) == {"pass", "skip"} and (ok["status"] == "pass").sum() > 1
    for name, how in (("cr-exit", "exited with code 3"), ("cr-segv", "killed by signal SIGSEGV")):
        mine = df[df["impl"] == name]
        errors = mine[mine["status"] == "error"]
        assert errors["reason"].iloc[0] == f"its process died during this case ({how})"
        assert errors["reason"].iloc[1:].str.startswith("not run").all() and len(errors) > 1
        assert len(errors) == (ok["status"] == "pass").sum()    # unsupported cases stay skips
    assert "cr-segv" in (out / "verify.md").read_text()


def test_conventions_and_precision_survive_a_crashing_implementation(crashy, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["conventions", "--quick", "--plugin", crashy, "--only", "cr-*",
                 "--out", str(out)]) == 0
    cells = pd.read_csv(out / "conventions.csv", keep_default_na=False)
    mine = cells[(cells["probe"] == "interleaved shift=0 sin|cos")].set_index("impl")
    assert mine.loc["cr-ok", "status"] == "match"
    assert "killed by signal SIGSEGV" in mine.loc["cr-segv", "reason"]
    assert "exited with code 3" in mine.loc["cr-exit", "reason"]

    # precision's own methods are not the point here: only the registered implementations
    # (conventions judged apart: its process never loaded the plugin; this one does, for precision)
    load_plugin(crashy)
    impls = [REGISTRY.get(n) for n in NAMES]
    points = precision.measure_impls(impls, [0, 1000], 30.0, isolate.Isolation((crashy,)))
    err = {(p.source, p.position): p.max_abs_err for p in points}
    assert err[("cr-ok", 1000)] < 1e-3
    assert math.isnan(err[("cr-segv", 0)]) and math.isnan(err[("cr-exit", 1000)])


def test_in_process_mode_gives_the_same_rows_for_well_behaved_implementations(tmp_path):
    impls = [REGISTRY.get("numpy-stack"), REGISTRY.get("seed-numpy-stack")]
    specs = default_cases(quick=True)[:12]
    here = verify.run(impls, specs)
    there = verify.run(impls, specs, isolation=isolate.Isolation())
    assert [(c.impl, c.spec, c.status) for c in here] == [(c.impl, c.spec, c.status) for c in there]


def test_a_child_that_cannot_start_is_the_harness_failing_exit_3(tmp_path, capsys):
    plugin = tmp_path / "dies_in_children.py"
    marker = tmp_path / "imported-once"
    plugin.write_text(
        "import os, pathlib\n"
        "from harness import register\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if marker.exists():\n"
        "    os._exit(4)           # the second import: the isolated child\n"
        "marker.write_text('parent')\n"
        "register(name='cr-never', backend='numpy')(lambda spec: (lambda: None))\n")
    try:
        code = main(["verify", "--quick", "--plugin", str(plugin), "--only", "cr-never",
                     "--out", str(tmp_path / "out")])
    finally:
        REGISTRY.remove("cr-never")
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("error: the harness itself failed: the isolated process for cr-never "
                          "exited with code 4 before loading the implementations")


def test_a_hang_that_holds_the_gil_is_killed_after_stall_s(tmp_path):
    plugin = tmp_path / "holds_the_gil.py"
    plugin.write_text(
        "import ctypes\n"
        "from harness import Supports, register\n"
        "ONE = Supports(layouts=('interleaved',), freq_shifts=(0,), dtypes=('float32',))\n"
        "@register(name='cr-gil', backend='python', supports=ONE)\n"
        "def build(spec):\n"
        "    # libc sleep through PyDLL keeps the GIL, and with SIGALRM blocked the call's\n"
        "    # deadline cannot interrupt it: only the parent's kill ends it\n"
        "    import signal\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\n"
        "    return lambda: ctypes.pythonapi.sleep(3600)\n")
    load_plugin(str(plugin))
    try:
        iso = isolate.from_args(argparse.Namespace(plugin=[str(plugin)]), stall_s=3.0)
        checks = verify.run([REGISTRY.get("cr-gil")], default_cases(quick=True), 1.0,
                            isolation=iso)
    finally:
        REGISTRY.remove("cr-gil")
    errors = [c for c in checks if c.status == "error"]
    assert errors[0].reason == "timeout: no result within 3 s; its process was killed"
    assert len(errors) > 1 and all(c.reason.startswith("not run") for c in errors[1:])


def test_conventions_measure_keeps_probe_order_through_isolation():
    impls = [REGISTRY.get("numpy-stack"), REGISTRY.get("numpy-cat")]
    grid = convention_matrix.probes(quick=True)
    here, _ = convention_matrix.build_tables(impls, grid, 30.0)
    there, _ = convention_matrix.build_tables(impls, grid, 30.0, isolate.Isolation())
    assert [(c.impl, c.probe, c.status) for c in here] == [(c.impl, c.probe, c.status) for c in there]


def test_verify_starts_each_backend_once_for_every_kind(tmp_path, monkeypatch):
    """One isolated pass over every kind: a backend's child (torch's or TensorFlow's imports,
    seconds each) serves its implementations of every kind, not one child per kind."""
    passes = []
    real = isolate.run

    def counting(impls, *args, **kwargs):
        passes.append(sorted({i.kind for i in impls}))
        return real(impls, *args, **kwargs)

    monkeypatch.setattr(isolate, "run", counting)
    code = main(["verify", "--quick", "--only", "numpy-stack", "--only", "rotary-numpy-cache",
                 "--dtypes", "float32", "--random", "0", "--out", str(tmp_path)])
    assert code == 0
    assert passes == [["rotary", "table"]]
    rows = pd.read_csv(tmp_path / "verify.csv")
    assert set(rows["impl"]) == {"numpy-stack", "rotary-numpy-cache"}
