"""Shared test setup: quiet TensorFlow, a deterministic hypothesis profile, small helpers."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

# Register the built-in implementations (harness.impls: this checkout's impls/, whatever an
# editable install points at; harness.core.plugins.SourceImpls).
from harness.core.plugins import load_builtins  # noqa: E402

load_builtins()


def pytest_addoption(parser) -> None:
    parser.addoption("--matrix", choices=("representative", "full"), default="representative",
                     help="tests/test_implementations.py's cases: each kind's representative ones "
                          "(`nox -s tests`) or its full list with the random ones (`nox -s matrix`)")


#: The test file whose verdicts take a core for most of `nox -s tests` (its matrix process).
MATRIX_FILE = "tests/test_implementations.py"


def pytest_collection_modifyitems(session, config, items) -> None:
    """The matrix's tests first: under `--dist loadfile --no-loadscope-reorder` (noxfile
    PARALLEL) one xdist worker starts its verdicts at once while the other takes the rest;
    scheduled by test count, the matrix started after a dozen files and the suite ended on it."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] != MATRIX_FILE)


def pytest_configure(config) -> None:
    """Under pytest-xdist (`nox -s tests`), keep its worker variables from the processes the
    tests start: a bench worker runs its own pytest, where PYTEST_XDIST_WORKER makes
    pytest-benchmark disable every benchmark (each cell then errors)."""
    if hasattr(config, "workerinput"):
        for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
            del os.environ[name]
