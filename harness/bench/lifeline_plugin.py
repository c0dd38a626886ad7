"""pytest plugin of bench's workers (`-p harness.bench.lifeline_plugin`): die with the parent.

First of every pytest_configure, so a worker is tied to its parent before it
spends seconds importing backends and plugins (harness.util.lifeline says how).
"""

from __future__ import annotations

import pytest

from harness.util import lifeline


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    lifeline.watch()
