"""pytest plugin of bench's workers (`-p harness.bench.lifeline_plugin`): die with the parent,
keep what the implementations start in its tree, and exit as soon as its results are written.

First of every pytest_configure, so a worker is tied to its parent before it
spends seconds importing backends and plugins (harness.util.lifeline says how),
and adopts its orphaned descendants (harness.util.reaper) so that the supervisor
kills them with it. Last of every pytest_unconfigure, after pytest-benchmark has
written its JSON, it leaves with os._exit: a non-daemon thread an implementation
started can no longer keep the worker alive until the supervisor's idle limit.
"""

from __future__ import annotations

import pytest

from harness.core.isolate import exit_now
from harness.util import lifeline, reaper

_STATUS = {"code": 0}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    lifeline.watch()
    reaper.adopt_orphans()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _STATUS["code"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    exit_now(_STATUS["code"])
