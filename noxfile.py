"""nox sessions: `nox -s tests`, `nox -s e2e`, `nox -s matrix`, `nox -s verify`, `nox -s bench`, `nox -s report`, `nox -s libraries`,
`nox -s triton`, `nox -s mutants`.

All sessions share one environment, `.nox/stack` (about 3 GB: torch, TensorFlow,
JAX, Numba), so the stack is installed once, not once per session. It is built
with virtualenv (which nox itself depends on) for Python 3.11 and reinstalled
only when pyproject.toml or constraints.txt change (a digest is kept beside it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["tests"]
ROOT = Path(__file__).parent
PYTHON = "3.11"
STACK = ROOT / ".nox" / "stack"
#: The environment of every process a session starts: TensorFlow's C++ banners off, and bytecode
#: written. The stack is installed with --no-compile (below), so each module is compiled on its
#: first import and its .pyc kept beside it. Where PYTHONDONTWRITEBYTECODE is set (shells and CI
#: images set it), nothing is kept and every process compiles torch and TensorFlow again: 25
#: against 10 CPU-s to import the stack, measured here, in each of the dozens of processes the
#: tests and a bench start. Clearing it touches only this project's own environment.
RUN_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONDONTWRITEBYTECODE": ""}
#: Every install is under the tested pins. --no-compile: pip byte-compiles every module of every
#: package it installs (half its CPU time for torch, TensorFlow and JAX: 160 against 75 CPU-s
#: here); Python compiles the few modules a run imports, once, on first use.
PIP_INSTALL = ("-m", "pip", "install", "--quiet", "--no-compile", "-c", "constraints.txt")


def pins_digest() -> str:
    """What an installed environment depends on: the requirements and their pins."""
    return hashlib.sha256(
        b"".join((ROOT / f).read_bytes() for f in ("pyproject.toml", "constraints.txt"))
    ).hexdigest()


def stack_python(session: nox.Session) -> str:
    """The shared environment's python, with `.[all,test]` installed under the constraints."""
    python = STACK / "bin" / "python"
    digest = pins_digest()
    marker = STACK / ".pe-harness-stack"
    if marker.exists() and marker.read_text() == digest and python.exists():
        session.log(f"stack already installed in {STACK} (shared by every session)")
        return str(python)
    interpreter = shutil.which(f"python{PYTHON}")
    if interpreter is None:   # a missing Python fails, never skips
        session.error(f"Python {PYTHON} is required (python{PYTHON} is not on PATH)")
    if not python.exists():
        session.run(sys.executable, "-m", "virtualenv", "--quiet", "-p", interpreter, str(STACK),
                    external=True)
    session.run(str(python), *PIP_INSTALL, "-e", ".[all,test]", external=True)
    marker.write_text(digest)
    return str(python)


def harness(session: nox.Session, verb: str) -> None:
    session.run(stack_python(session), "-m", "harness", verb, *session.posargs, external=True,
                env=RUN_ENV)


#: pytest-xdist: the tests in two processes, one per core of the 2-core machine the suite's time
#: is promised on, a test file per process at a time (`loadfile`: a module's fixture is built once,
#: where spreading a module's tests over both processes built each of them twice).
PARALLEL = ("-n", "2", "--dist", "loadfile", "--no-loadscope-reorder")   # tests/conftest.py


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The test suite: correctness of every implementation on each kind's representative cases,
    the harness, the reports, each verb run once. `-- ARGS` runs `pytest ARGS` in one process
    instead. The end-to-end scenarios are `nox -s e2e`."""
    python = stack_python(session)
    if session.posargs:
        session.run(python, "-m", "pytest", *session.posargs, external=True, env=RUN_ENV)
        return
    session.run(python, "-m", "pytest", *PARALLEL, "-m", "not e2e and not alone", external=True,
                env=RUN_ENV)


@nox.session(venv_backend="none")
def e2e(session: nox.Session) -> None:
    """The end-to-end scenarios (`e2e`): real sweeps, post-steps and reports in subprocesses -
    faults, hangs, a killed run and its resume, cheats caught by bench, a new kind from one
    folder - then the tests marked `alone`, which time real runs (a second process on the cores
    would move their medians), by themselves. CI runs it after `nox -s tests`."""
    python = stack_python(session)
    session.run(python, "-m", "pytest", *PARALLEL, "-m", "e2e and not alone", external=True,
                env=RUN_ENV)
    session.run(python, "-m", "pytest", "-m", "alone", external=True, env=RUN_ENV)


@nox.session(venv_backend="none")
def matrix(session: nox.Session) -> None:
    """Every implementation on every case of its kind's full list, the random ones seeded (the
    large cases in every dtype): what `nox -s tests` checks on representative cases only."""
    session.run(stack_python(session), "-m", "pytest", "-p", "no:cacheprovider",
                "tests/test_implementations.py", "--matrix", "full", *session.posargs,
                external=True, env=RUN_ENV)


@nox.session(venv_backend="none")
def verify(session: nox.Session) -> None:
    """Check every implementation against the float64 reference; fails on any wrong one."""
    harness(session, "verify")


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """The default timing sweep into results/ (`-- --quick` for a small grid)."""
    harness(session, "bench")


@nox.session(venv_backend="none")
def report(session: nox.Session) -> None:
    """Rebuild report.md and plots of run directories (default: the newest under results/)."""
    harness(session, "report")


#: Installed --no-deps: openai-whisper declares triton and keras-hub the full tensorflow (plus
#: tensorflow-text), either of which would replace the CPU stack (docs/libraries.md).
NO_DEPS = ("openai-whisper", "keras-hub")
#: The registered library implementations (impls/libraries), by the names of whose code runs.
LIBRARY_IMPLS = ("transformers-*", "diffusers-*", "positional-encodings-*", "whisper-*",
                 "rotary-embedding-torch-*", "torchtune-*", "keras-hub-*", "x-transformers-*")


def libraries_python(session: nox.Session) -> str:
    """The shared stack with the `libraries` extra too, reinstalled when the pins change."""
    python = stack_python(session)
    digest = pins_digest()
    marker = STACK / ".pe-harness-libraries"
    if marker.exists() and marker.read_text() == digest:
        session.log("libraries already installed in the stack")
        return python
    session.run(python, *PIP_INSTALL, "-e", ".[all,test,libraries]", external=True)
    session.run(python, *PIP_INSTALL, "--no-deps", *NO_DEPS, external=True)
    marker.write_text(digest)
    return python


@nox.session(venv_backend="none")
def libraries(session: nox.Session) -> None:
    """The real library functions: verify (quick), a quick bench, and the pinned-table tests that
    name the library, version and first differing position when an upgrade changes a table."""
    python = libraries_python(session)
    only = [arg for pattern in LIBRARY_IMPLS for arg in ("--only", pattern)]
    with tempfile.TemporaryDirectory(prefix="pe-libraries-") as out:
        session.run(python, "-m", "harness", "verify", "--quick", *only, "--out", f"{out}/verify",
                    external=True, env=RUN_ENV)
        session.run(python, "-m", "harness", "bench", "--quick", *only, "--out", f"{out}/bench",
                    "--no-post", external=True, env=RUN_ENV)
    session.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_libraries.py",
                "tests/test_libraries_pinned.py", *session.posargs, external=True, env=RUN_ENV)


#: Beside the stack, not in it: triton and the Triton kernel libraries, installed --no-deps into a
#: folder on the path of `nox -s triton` alone (the stack's torch and tests never see them).
TRITON_SITE = ROOT / ".nox" / "triton-site"
TRITON_PACKAGES = ("triton", "liger-kernel")
#: Every Triton kernel: the project's and the libraries' (docs/gpu.md); those needing a GPU skip.
TRITON_IMPLS = ("triton-*", "liger-*", "flash-attn-*")
TRITON_TESTS = ("tests/test_triton_rotary.py", "tests/test_tune_triton_rotary.py",
                "tests/test_triton_libraries.py")


def triton_python(session: nox.Session) -> str:
    """The stack's python, with TRITON_SITE (reinstalled when the pins change) to go on its path."""
    python = stack_python(session)
    digest = pins_digest()
    marker = TRITON_SITE / ".pe-harness-triton"
    if marker.exists() and marker.read_text() == digest:
        session.log(f"triton and the kernel libraries already installed in {TRITON_SITE}")
        return python
    shutil.rmtree(TRITON_SITE, ignore_errors=True)
    session.run(python, *PIP_INSTALL, "--no-deps",
                "--target", str(TRITON_SITE), *TRITON_PACKAGES, external=True)
    session.run(python, "scripts/kernel_sources.py", str(TRITON_SITE), external=True)
    marker.write_text(digest)
    return python


@nox.session(venv_backend="none")
def triton(session: nox.Session) -> None:
    """Every Triton kernel (the project's, Liger's, FlashAttention's) through verify --quick and
    their tests on the CPU, in Triton's interpreter (TRITON_INTERPRET=1); what needs a GPU skips
    with the reason."""
    python = triton_python(session)
    env = {**RUN_ENV, "TRITON_INTERPRET": "1", "PYTHONPATH": str(TRITON_SITE)}
    only = [arg for pattern in TRITON_IMPLS for arg in ("--only", pattern)]
    with tempfile.TemporaryDirectory(prefix="pe-triton-") as out:
        session.run(python, "-m", "harness", "verify", "--quick", *only, "--out", out,
                    external=True, env=env)
    session.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TRITON_TESTS,
                *session.posargs, external=True, env=env)


#: The modules that decide a verdict, each with the tests that cover it: the one list that
#: `nox -s mutants` reads (docs/mutants.md). mutmut mutates these modules and runs each mutant
#: against those tests of the selection that call the mutated function.
#: A test here calls the judge in its own process (harness.core.checks.check, not check_callable's
#: judge process), so mutmut sees which functions each test runs.
_JUDGED = ("tests/test_judge_boundary.py", "tests/test_judge_nonfinite.py",
           "tests/test_judge_parts.py", "tests/test_judge_verdicts.py",
           "tests/test_judge_reasons.py")
JUDGE: dict[str, tuple[str, ...]] = {
    "harness/core/checks.py": (*_JUDGED, "tests/test_grid_checks.py", "tests/test_kinds.py",
                               "tests/test_rotary_forms.py"),
    "harness/core/observe.py": (*_JUDGED, "tests/test_judge_observe.py",
                                "tests/test_rotary_forms.py"),
    "harness/core/inplace.py": ("tests/test_judge_observe.py", "tests/test_rotary_forms.py",
                                "tests/test_judge_verdicts.py", "tests/test_judge_reasons.py"),
    "harness/core/handover.py": ("tests/test_judge_inputs_rule.py", "tests/test_judge_observe.py",
                                 "tests/test_judge_verdicts.py", "tests/test_judge_reasons.py"),
    "harness/core/kinds/table/reference.py": ("tests/test_reference.py",
                                              "tests/test_oracle_placement.py"),
    "harness/core/kinds/table/tolerance.py": ("tests/test_judge_tolerance.py",
                                              "tests/test_reference.py"),
    "harness/core/kinds/table/__init__.py": ("tests/test_judge_boundary.py",
                                             "tests/test_judge_bench_results.py",
                                             "tests/test_judge_inputs_rule.py"),
    "harness/core/kinds/rotary/reference.py": ("tests/test_rotary_reference.py",
                                               "tests/test_rotary_oracle.py",
                                               "tests/test_rotary_forms.py"),
    "harness/core/kinds/rotary/tolerance.py": ("tests/test_judge_tolerance.py",
                                               "tests/test_rotary_reference.py"),
    "harness/core/kinds/rotary/apply.py": ("tests/test_rotary_oracle.py",
                                           "tests/test_judge_boundary.py",
                                           "tests/test_rotary_forms.py",
                                           "tests/test_judge_inputs_rule.py"),
    "harness/core/kinds/grid/reference.py": ("tests/test_grid_oracle.py", "tests/test_judge_tolerance.py"),
    "harness/core/kinds/grid/plan.py": ("tests/test_grid_oracle.py",),
    "harness/core/kinds/timestep/reference.py": ("tests/test_timestep.py",
                                                 "tests/test_judge_tolerance.py"),
    "harness/core/contract.py": ("tests/test_judge_tolerance.py", "tests/test_judge_boundary.py"),
    "harness/bench/validity.py": ("tests/test_judge_retention.py", "tests/test_judge_walk.py",
                                  "tests/test_judge_bench_results.py",
                                  "tests/test_bench_validity.py"),
    "harness/bench/fingerprint.py": ("tests/test_judge_bench_apart.py",
                                     "tests/test_judge_fingerprint.py",
                                     "tests/test_judge_inputs_rule.py"),
    "harness/runs/flags.py": ("tests/test_judge_timing.py", "tests/test_load_flags.py",
                              "tests/test_judge_inputs_rule.py"),
}
#: Tests of the selection too slow to run against every mutant (covered by faster ones).
MUTANTS_DESELECT = (
    "tests/test_bench_validity.py::test_a_module_built_on_the_meta_device_keeps_no_bytes",
    "tests/test_judge_boundary.py::test_check_callable_draws_the_same_line_in_its_judge_process",
    "tests/test_rotary_reference.py::test_an_honest_float32_implementation_passes_every_case",
    "tests/test_bench_validity.py::test_recycled_and_angle_addition_builders_are_not_lookups",
    "tests/test_bench_validity.py::test_a_sweep_records_invalid_cells_and_says_so",
    "tests/test_rotary_forms.py::test_the_built_in_form_kernels_pass_every_form_in_every_dtype",
    "tests/test_rotary_forms.py::test_bench_gives_an_in_place_kernel_fresh_inputs_before_every_round_outside_the_timing",
    # these run bench, conventions or identify as processes (the judge is apart there)
    "tests/test_judge_bench_apart.py::test_a_consistently_wrong_plugin_that_rewrites_numpy_is_invalid_in_bench",
    "tests/test_judge_bench_apart.py::test_the_catalog_answers_supports_and_availability_from_the_plugins_process",
    "tests/test_judge_bench_apart.py::test_conventions_judges_apart_a_plugin_rewriting_numpy_cannot_match_zeros",
    "tests/test_judge_bench_apart.py::test_identify_keeps_a_plugin_rewriting_numpy_out_of_its_search",
)
#: mutmut's working folder: the generated config, and its cache of mutants and results (a rerun
#: after a change re-tests only the functions that changed).
MUTANTS_WORK = ROOT / ".nox" / "mutants"
#: mutmut and what it needs beyond the stack (their pins: the `mutants` block of constraints.txt).
MUTANTS_SITE = ROOT / ".nox" / "mutants-site"
MUTANTS_PACKAGES = ("mutmut", "libcst", "setproctitle", "textual", "platformdirs", "coverage")
KILLED_CODES = {1, 3, 36, -24, 24, 152, 255, -11, -9}   # killed, or a timeout/crash a test saw


def mutants_python(session: nox.Session) -> str:
    """The stack's python, with mutmut and what it adds (the `mutants` pins of constraints.txt)
    installed into MUTANTS_SITE beside the stack, not in it, so the tests' environment is the
    same with or without it; reinstalled when the pins change."""
    python = stack_python(session)
    marker = MUTANTS_SITE / ".pe-harness-mutants"
    if marker.exists() and marker.read_text() == pins_digest():
        session.log(f"mutmut already installed in {MUTANTS_SITE}")
        return python
    shutil.rmtree(MUTANTS_SITE, ignore_errors=True)
    session.run(python, *PIP_INSTALL, "--no-deps",
                "--target", str(MUTANTS_SITE), *MUTANTS_PACKAGES, external=True)
    marker.write_text(pins_digest())
    return python


def mutants_workdir(work: Path = MUTANTS_WORK) -> Path:
    """mutmut reads its settings from pyproject.toml in the folder it runs in: this project's,
    plus a [tool.mutmut] table made from JUDGE, beside links to the sources and tests."""
    work.mkdir(parents=True, exist_ok=True)
    for name in ("harness", "impls", "tests"):
        link = work / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name, target_is_directory=True)
    selection = sorted({test for tests in JUDGE.values() for test in tests})
    settings = {
        "source_paths": ["harness"],
        "also_copy": ["impls"],
        "only_mutate": sorted(JUDGE),
        "pytest_add_cli_args_test_selection": selection,
        "pytest_add_cli_args": [f"--deselect={test}" for test in MUTANTS_DESELECT]
        + ["-p", "no:cacheprovider"],
        # a mutant that loops is stopped after a few times its tests' CPU time, not fifteen
        "timeout_multiplier": 3.0,
        "timeout_constant": 2.0,
    }
    table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    config = (ROOT / "pyproject.toml").read_text() + "\n[tool.mutmut]\n" + table + "\n"
    path = work / "pyproject.toml"
    if not path.exists() or path.read_text() != config:
        path.write_text(config)
    return work


def mutants_score(work: Path = MUTANTS_WORK) -> tuple[dict[str, tuple[int, int]], list[str], int]:
    """({module: (killed, tested)}, the survivors as "name: why", how many are not yet tested)
    from mutmut's results; a survivor is a mutant no test failed on (no test reached it too)."""
    score: dict[str, tuple[int, int]] = {}
    survivors: list[str] = []
    untested = 0
    for module in sorted(JUDGE):
        meta = work / "mutants" / f"{module}.meta"
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        tested = {name: code for name, code in codes.items() if code is not None}
        untested += len(codes) - len(tested)
        killed = [name for name, code in tested.items() if code in KILLED_CODES]
        survivors += [f"{name}: {'no test reaches it' if tested[name] in (5, 33) else 'survived'}"
                      for name in sorted(set(tested) - set(killed))]
        score[module] = (len(killed), len(tested))
    return score, survivors, untested


def tests_digest() -> str:
    """What the mutants' results were measured with: every file of tests/ (a test changed or
    added may kill a survivor; mutmut itself re-tests only the mutants of changed functions)."""
    files = sorted(path for path in (ROOT / "tests").rglob("*.py") if "__pycache__" not in path.parts)
    return hashlib.sha256(b"".join(bytes(path.relative_to(ROOT)) + path.read_bytes()
                                   for path in files)).hexdigest()


@nox.session(venv_backend="none")
def mutants(session: nox.Session) -> None:
    """Mutation testing of the modules that decide a verdict (JUDGE): run it before and after
    changing the judge. Prints the score last; the survivors go to .nox/mutants/survivors.txt.
    A rerun tests the mutants of the functions that changed, and the survivors again when the
    tests changed. `-- NAME_GLOB ...` re-tests only those mutants (mutmut's names);
    MUTANTS_PYTHON=PATH runs a python that already has the stack, skipping the install."""
    python = os.environ.get("MUTANTS_PYTHON") or mutants_python(session)
    env = {**RUN_ENV, "PYTHONPATH": str(MUTANTS_SITE)}
    work = mutants_workdir()
    mutmut = ("nice", "-n", "10", python, "-m", "mutmut", "run",
              "--max-children", str(max(1, os.cpu_count() or 2)))
    marker, digest = work / "tests.sha256", tests_digest()   # the tests this run copies
    with session.chdir(work):
        session.run(*mutmut, *session.posargs, external=True, env=env)
        _, survivors, _ = mutants_score(work)
        if not session.posargs and survivors and marker.exists() and marker.read_text() != digest:
            session.log(f"the tests changed: {len(survivors)} survivors tested again")
            session.run(*mutmut, *(line.split(":")[0] for line in survivors), external=True, env=env)
    if not session.posargs:
        marker.write_text(digest)
    score, survivors, untested = mutants_score(work)
    (work / "survivors.txt").write_text("".join(f"{line}\n" for line in survivors))
    for module, (killed, tested) in score.items():
        session.log(f"{module}: {killed}/{tested} killed")
    killed = sum(k for k, _ in score.values())
    tested = sum(t for _, t in score.values())
    if untested:
        session.warn(f"{untested} mutants not tested yet (an interrupted run): run it again")
    session.log(f"{len(survivors)} survivors listed in {work / 'survivors.txt'} (docs/mutants.md)")
    session.log(f"mutation score: {killed}/{tested} killed = {100 * killed / max(1, tested):.1f}%")
