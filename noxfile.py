"""nox sessions: `nox -s tests`, `nox -s verify`, `nox -s bench`, `nox -s report`.

Each session installs the whole stack once (pinned by constraints.txt) and
reuses its environment afterwards: the install is skipped while pyproject.toml
and constraints.txt are unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import nox

nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True   # a missing Python fails CI, never skips it
nox.options.sessions = ["tests"]
ROOT = Path(__file__).parent
PYTHON = "3.11"


def install_stack(session: nox.Session) -> None:
    """pip install -e '.[all,test]' under the constraints, unless this env already has it."""
    digest = hashlib.sha256(
        b"".join((ROOT / f).read_bytes() for f in ("pyproject.toml", "constraints.txt"))
    ).hexdigest()
    marker = Path(session.virtualenv.location) / ".pe-harness-stack"
    if marker.exists() and marker.read_text() == digest:
        session.log("stack already installed in this environment (reused)")
        return
    session.install("-c", "constraints.txt", "-e", ".[all,test]")
    marker.write_text(digest)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite: correctness of every implementation, the harness, the reports."""
    install_stack(session)
    session.run("pytest", *session.posargs, env={"TF_CPP_MIN_LOG_LEVEL": "2"})


@nox.session(python=PYTHON)
def verify(session: nox.Session) -> None:
    """Check every implementation against the float64 reference; fails on any wrong one."""
    install_stack(session)
    session.run("python", "-m", "harness", "verify", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The default timing sweep into results/ (`-- --quick` for a small grid)."""
    install_stack(session)
    session.run("python", "-m", "harness", "bench", *session.posargs)


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Rebuild report.md and plots of run directories (default: the newest under results/)."""
    install_stack(session)
    session.run("python", "-m", "harness", "report", *session.posargs)
