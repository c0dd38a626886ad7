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


@pytest.mark.e2e
def test_an_implementation_right_only_on_a_learned_case_list_fails_fresh_cases(tmp_path):
    """It memorised every case of a seed-0 run; each run draws its random cases from a fresh
    seed, recorded, and `--seed` draws the same ones again."""
    plugin = write(tmp_path, "learner", textwrap.dedent('''
        from harness import reference
        from harness.core.kinds.table.cases import default_cases
        LEARNED = set(default_cases(seed=0, n_random=2))
        def small(spec):   # every case a run draws, the fixed ones small enough to be quick
            small = spec not in LEARNED or spec.length * spec.d_model <= 50_000
            return None if small and spec.dtype in ("float32", "float64") else "not this one"
        @register(name="adv-learner", backend="numpy", supports=small)
        def build(spec):
            if spec in LEARNED:
                return lambda: reference(spec).astype(spec.dtype)
            return lambda: np.zeros((spec.length, spec.d_model), spec.dtype)
        '''))
    code, text, out = verify_full(plugin, tmp_path / "fresh", "--random", "2")
    rows = pd.read_csv(out / "verify.csv", keep_default_na=False)
    seed = int(rows["seed"].iloc[0])
    assert code == 1 and seed != 0, text
    assert f"--seed {seed}" in text and f"seed {seed}" in (out / "verify.md").read_text()
    code, text, out = verify_full(plugin, tmp_path / "learned", "--random", "2", "--seed", "0")
    assert code == 0, text                     # the learned list, as the seed reproduces it


def verify_full(plugin: Path, tmp_path: Path, *extra: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness", "verify", "--plugin", str(plugin),
                           "--only", "adv-*", "--out", str(out), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return done.returncode, done.stdout + done.stderr, out


def bench(plugin: Path, tmp_path: Path, *extra: str) -> tuple[int, str, pd.DataFrame]:
    """A tiny `bench --no-post` of the plugin's implementations; (exit code, output, bench.csv)."""
    out = tmp_path / "runs"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "--out", str(out), "--no-post",
                           "--threads", "1", "--dtypes", "float32", "--workloads", "table",
                           "--d-models", "8", "--max-time", "0.01", "--plugin", str(plugin),
                           "--only", "adv-*", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    text = done.stdout + done.stderr + f"\n({time.monotonic() - started:.0f} s)"
    csv = next(out.glob("*/bench.csv"), None)
    rows = pd.read_csv(csv, keep_default_na=False) if csv else pd.DataFrame()
    return done.returncode, text, rows


@pytest.mark.e2e
def test_bench_workers_leave_no_process_and_no_thread_holds_them(tmp_path):
    """Each call starts sleepers (one setsid, one orphaned) and a non-daemon thread: the sweep
    ends in far less than the workers' 120 s idle limit, and nothing survives it."""
    marker = f"{300 + os.getpid() % 97}.{time.time_ns() % 10**9:09d}"
    plugin = write(tmp_path, "bench_spawns", textwrap.dedent(f'''
        import subprocess, threading, time
        from harness import reference
        @register(name="adv-spawns", backend="numpy", supports=ONE)
        def build(spec):
            threading.Thread(target=time.sleep, args=(600,), daemon=False).start()
            table = reference(spec).astype(spec.dtype)
            def call():
                if not getattr(call, "started", False):
                    call.started = True
                    subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
                    subprocess.Popen(["sh", "-c", "(setsid sleep {marker} &)"])
                return table.copy()
            return call
        '''))
    started = time.monotonic()
    code, text, rows = bench(plugin, tmp_path, "--lengths", "8")
    assert code == 0, text
    assert time.monotonic() - started < 100, text
    assert left_behind(marker) == []


@pytest.mark.e2e
def test_a_hanging_implementation_costs_one_timeout_per_sweep(tmp_path):
    plugin = write(tmp_path, "bench_hang", textwrap.dedent('''
        import time
        @register(name="adv-hang", backend="numpy", supports=ONE)
        def build(spec):
            def call():
                time.sleep(600)
            return call
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "8,16,32", "--timeout-s", "3")
    assert code == 0, text
    mine = rows[rows["impl"] == "adv-hang"]
    assert list(mine["status"]) == ["timeout"] * 3
    assert sum(mine["reason"].str.startswith("not run: an earlier cell")) == 2


@pytest.mark.alone   # a second process on the cores gets its cells measured again, unflagged
def test_a_faked_clock_is_caught_by_the_supervisors_own(tmp_path):
    """perf_counter patched at import to run 50x slow: every cell of the worker is flagged.
    Each call sleeps 2 ms (40 us by its clock), and max_time is 0.06 s (3 s by the machine's):
    pytest-benchmark sizes its rounds from one calibration call, and a 1 us call caught by one
    page fault, or a 2 ms one under load, ran a fifth of max_time, under the supervisor's 1 s
    floor for judging a clock."""
    plugin = write(tmp_path, "bench_clock", textwrap.dedent('''
        import time
        from harness import reference
        _real = time.perf_counter
        time.perf_counter = lambda: _real() / 50
        @register(name="adv-clock", backend="numpy", supports=ONE)
        def build(spec):
            def call():
                time.sleep(0.002)
                return reference(spec).astype(spec.dtype)
            return call
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "8", "--max-time", "0.06")
    assert code == 0, text
    mine = rows[rows["impl"] == "adv-clock"].iloc[0]
    assert mine["status"] == "ok" and "clock: its timer counted" in mine["flags"], text


@pytest.mark.e2e
def test_a_time_below_a_fill_of_the_same_bytes_is_never_recommended(tmp_path):
    """A fresh row broadcast to the table's shape: finite, of the right shape and dtype, a new
    buffer each call, and returned far faster than any fill of the table's bytes. Its values are
    not the table's, so bench's own judge makes it invalid (harness.bench.fingerprint); a right
    one that fast would be flagged implausible (tests/test_judge_timing.py)."""
    plugin = write(tmp_path, "bench_empty", textwrap.dedent('''
        @register(name="adv-empty", backend="numpy", supports=ONE)
        def build(spec):
            shape = (spec.length, spec.d_model)
            return lambda: np.broadcast_to(np.zeros(spec.d_model, spec.dtype), shape)
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "4096", "--d-models", "1024")
    assert code == 0, text
    mine = rows[rows["impl"] == "adv-empty"].iloc[0]
    assert mine["status"] == "invalid" and "differ from the reference" in mine["reason"], text


@pytest.mark.e2e
def test_a_builder_that_computes_once_and_copies_is_invalid(tmp_path):
    """Nothing kept at setup, its table kept from the first call and copied from then on: the
    worker poisons what it kept, and the warm call hands back NaN."""
    plugin = write(tmp_path, "bench_once", textwrap.dedent('''
        from harness import reference
        @register(name="adv-once", backend="numpy", supports=ONE)
        def build(spec):
            box = {}
            def call():
                if "table" not in box:
                    box["table"] = reference(spec).astype(spec.dtype)
                return box["table"].copy()
            return call
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "64")
    assert code == 0, text
    mine = rows[rows["impl"] == "adv-once"].iloc[0]
    assert mine["status"] == "invalid", text
    assert "kept from its first call were poisoned" in mine["reason"]


@pytest.mark.e2e
def test_a_callable_that_answers_otherwise_under_the_timer_is_invalid(tmp_path):
    """Right when called untimed, a (finite) table of zeros when pytest-benchmark is on the
    stack: what the timed calls returned is checked too."""
    plugin = write(tmp_path, "bench_timed", textwrap.dedent('''
        import sys
        from harness import reference
        def timed():
            frame = sys._getframe(1)
            while frame is not None:
                if "pytest_benchmark" in frame.f_code.co_filename:
                    return True
                frame = frame.f_back
            return False
        @register(name="adv-timed", backend="numpy", supports=ONE)
        def build(spec):
            shape = (spec.length, spec.d_model)
            def call():
                if timed():
                    return np.zeros(shape, spec.dtype)
                return reference(spec).astype(spec.dtype)
            return call
        '''))
    code, text, rows = bench(plugin, tmp_path, "--lengths", "64")
    assert code == 0, text
    mine = rows[rows["impl"] == "adv-timed"].iloc[0]
    assert mine["status"] == "invalid", text
    assert "behaves differently when timed" in mine["reason"]
