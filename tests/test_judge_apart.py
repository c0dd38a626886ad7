"""Adversary plugins against the judge: each cheat is a plugin file run through `verify` as a user
would (a subprocess), asserting the verdict, the exit code and that no process it started is
left behind.

The verify process judges apart: it never imports a plugin or a built-in implementation, so a
plugin that rewrites numpy or the harness's own comparison at import changes only the process
its implementations run in, whose results the judge compares against its own reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAD = textwrap.dedent('''
    import numpy as np
    from harness import Supports, register
    ONE = Supports(layouts=("interleaved",), freq_shifts=(0,), dtypes=("float32",))
    ''')
ZEROS = textwrap.dedent('''
    @register(name="adv-zeros", backend="numpy", supports=ONE)
    def build(spec):
        return lambda: np.zeros((spec.length, spec.d_model), spec.dtype)
    ''')
#: Each rewrites part of what a judge in the same process would use, then registers zeros.
SABOTAGE = {
    "numpy-sin-cos": "np.sin = np.cos = lambda x, *a, **k: np.zeros(np.shape(x))\n",
    "numpy-abs": "np.abs = np.absolute = lambda x, *a, **k: np.zeros(np.shape(x))\n",
    "harness-comparison": textwrap.dedent('''
        from harness.core import checks, kinds, tolerance
        checks.error_ratio = lambda *a, **k: checks.Comparison(None, 0.0, 1.0, 0.0)
        checks.compare = lambda *a, **k: checks.Comparison(None, 0.0, 1.0, 0.0)
        for kind in kinds.KINDS.values():
            object.__setattr__(kind, "tolerance", lambda spec: np.full((spec.length, 
                spec.d_model), np.inf))
        '''),
}


def verify(plugin: Path, tmp_path: Path, *extra: str, timeout: float = 240) -> tuple[int, str, Path]:
    """`python -m harness verify --quick` on the plugin's implementations alone."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness", "verify", "--quick", "--plugin",
                           str(plugin), "--only", "adv-*", "--out", str(out), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return done.returncode, done.stdout + done.stderr, out


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + body)
    return path


def left_behind(marker: str) -> list[str]:
    """Processes still running whose command line holds `marker` (the test's own sleepers)."""
    time.sleep(0.2)
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            if marker in cmd and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid}: {cmd}")
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("attack", sorted(SABOTAGE))
def test_a_plugin_rewriting_the_judge_at_import_cannot_pass_zeros(attack, tmp_path):
    plugin = write(tmp_path, attack.replace("-", "_"), SABOTAGE[attack] + ZEROS)
    code, text, out = verify(plugin, tmp_path)
    assert code == 1, text
    assert "FAILED: adv-zeros" in text
    rows = pd.read_csv(out / "verify.csv", keep_default_na=False)
    assert set(rows["status"]) == {"fail", "skip"} and (rows["status"] == "fail").sum() >= 3


def test_the_verify_process_never_imports_an_implementation(tmp_path):
    plugin = write(tmp_path, "marker", ZEROS)
    probe = (f"import sys; from harness.cli import main; "
             f"code = main(['verify', '--quick', '--plugin', {str(plugin)!r}, '--only', 'adv-*', "
             f"'--out', {str(tmp_path / 'out')!r}]); "
             "bad = [m for m in sys.modules if m.startswith(('harness.impls', 'pe_harness_plugin'))]; "
             "print('IMPORTED', bad); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "IMPORTED []" in done.stdout


def test_a_correct_plugin_still_passes_through_the_judge(tmp_path):
    plugin = write(tmp_path, "honest", textwrap.dedent('''
        from harness import reference
        @register(name="adv-honest", backend="numpy", supports=ONE)
        def build(spec):
            return lambda: reference(spec).astype(spec.dtype)
        '''))
    code, text, out = verify(plugin, tmp_path)
    assert code == 0, text
    assert "all implementations pass" in text


@pytest.mark.parametrize("how", ["sys.exit(0)", "os._exit(0)"])
def test_a_plugin_exiting_at_import_is_a_usage_error_naming_it(how, tmp_path):
    plugin = write(tmp_path, "quits", f"import os, sys\n{how}\n" + ZEROS)
    code, text, _ = verify(plugin, tmp_path)
    assert code == 2, text
    assert f"plugin {str(plugin)!r} ended its process at import" in text


def test_processes_an_implementation_starts_die_with_verify(tmp_path):
    """Two sleepers per call, one of them in a session of its own (setsid), one orphaned by a
    double fork; none survives the verb."""
    marker = f"{300 + os.getpid() % 97}.{time.time_ns() % 10**9:09d}"   # sleep's unique argument
    plugin = write(tmp_path, "spawns", textwrap.dedent(f'''
        import os, subprocess
        from harness import reference
        def sleepers():
            subprocess.Popen(["sleep", "{marker}"])
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
            subprocess.Popen(["sh", "-c", "(setsid sleep {marker} &)"])
        @register(name="adv-spawns", backend="numpy", supports=ONE)
        def build(spec):
            def call():
                sleepers()
                return reference(spec).astype(spec.dtype)
            return call
        '''))
    code, text, _ = verify(plugin, tmp_path)
    assert code == 0, text
    assert left_behind(marker) == []


def test_a_hanging_supports_and_a_raising_supports_are_verdicts(tmp_path):
    plugin = write(tmp_path, "supports", textwrap.dedent('''
        import time
        def hangs(spec):
            time.sleep(300)
        def raises(spec):
            raise RuntimeError("no idea")
        register(name="adv-hangs", backend="numpy", supports=hangs)(lambda spec: None)
        register(name="adv-raises", backend="numpy", supports=raises)(lambda spec: None)
        '''))
    code, text, out = verify(plugin, tmp_path, "--timeout-s", "1")
    assert code == 1, text
    rows = pd.read_csv(out / "verify.csv", keep_default_na=False)
    hangs, raises = (rows[rows["impl"] == n] for n in ("adv-hangs", "adv-raises"))
    assert hangs["reason"].iloc[0] == "supports: timeout: did not return within 1 s"
    assert set(hangs["reason"].iloc[1:]) == {"not run: an earlier case timed out"}
    assert set(raises["reason"]) == {"supports: RuntimeError: no idea"}
    assert set(rows["status"]) == {"error"}
