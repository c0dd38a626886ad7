"""nox sessions: `nox -s tests`, `nox -s verify`, `nox -s bench`, `nox -s report`, `nox -s libraries`,
`nox -s triton`.

All sessions share one environment, `.nox/stack` (about 3 GB: torch, TensorFlow,
JAX, Numba), so the stack is installed once, not once per session. It is built
with virtualenv (which nox itself depends on) for Python 3.11 and reinstalled
only when pyproject.toml or constraints.txt change (a digest is kept beside it).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["tests"]
ROOT = Path(__file__).parent
PYTHON = "3.11"
STACK = ROOT / ".nox" / "stack"
QUIET_TF = {"TF_CPP_MIN_LOG_LEVEL": "2"}


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
    session.run(str(python), "-m", "pip", "install", "--quiet", "-c", "constraints.txt",
                "-e", ".[all,test]", external=True)
    marker.write_text(digest)
    return str(python)


def harness(session: nox.Session, verb: str) -> None:
    session.run(stack_python(session), "-m", "harness", verb, *session.posargs, external=True,
                env=QUIET_TF)


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The test suite: correctness of every implementation, the harness, the reports."""
    session.run(stack_python(session), "-m", "pytest", *session.posargs, external=True,
                env=QUIET_TF)


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
    session.run(python, "-m", "pip", "install", "--quiet", "-c", "constraints.txt",
                "-e", ".[all,test,libraries]", external=True)
    session.run(python, "-m", "pip", "install", "--quiet", "--no-deps", "-c", "constraints.txt",
                *NO_DEPS, external=True)
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
                    external=True, env=QUIET_TF)
        session.run(python, "-m", "harness", "bench", "--quick", *only, "--out", f"{out}/bench",
                    "--no-post", external=True, env=QUIET_TF)
    session.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_libraries.py",
                "tests/test_libraries_pinned.py", *session.posargs, external=True, env=QUIET_TF)


#: Beside the stack, not in it: triton and the Triton kernel libraries, installed --no-deps into a
#: folder on the path of `nox -s triton` alone (the stack's torch and tests never see them).
TRITON_SITE = ROOT / ".nox" / "triton-site"
TRITON_PACKAGES = ("triton",)
#: Every Triton kernel of the project (docs/gpu.md).
TRITON_IMPLS = ("triton-*",)
TRITON_TESTS = ("tests/test_triton_rotary.py",)


def triton_python(session: nox.Session) -> str:
    """The stack's python, with TRITON_SITE (reinstalled when the pins change) to go on its path."""
    python = stack_python(session)
    digest = pins_digest()
    marker = TRITON_SITE / ".pe-harness-triton"
    if marker.exists() and marker.read_text() == digest:
        session.log(f"triton and the kernel libraries already installed in {TRITON_SITE}")
        return python
    shutil.rmtree(TRITON_SITE, ignore_errors=True)
    session.run(python, "-m", "pip", "install", "--quiet", "--no-deps", "-c", "constraints.txt",
                "--target", str(TRITON_SITE), *TRITON_PACKAGES, external=True)
    marker.write_text(digest)
    return python


@nox.session(venv_backend="none")
def triton(session: nox.Session) -> None:
    """Every Triton kernel through verify --quick and its tests on the CPU, in Triton's
    interpreter (TRITON_INTERPRET=1); what needs a GPU skips with the reason."""
    python = triton_python(session)
    env = {**QUIET_TF, "TRITON_INTERPRET": "1", "PYTHONPATH": str(TRITON_SITE)}
    only = [arg for pattern in TRITON_IMPLS for arg in ("--only", pattern)]
    with tempfile.TemporaryDirectory(prefix="pe-triton-") as out:
        session.run(python, "-m", "harness", "verify", "--quick", *only, "--out", out,
                    external=True, env=env)
    session.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TRITON_TESTS,
                *session.posargs, external=True, env=env)
