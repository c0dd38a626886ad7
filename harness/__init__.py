"""pe-harness: verify, time and identify sinusoidal positional encodings.

Public contract (docs and README): `Spec`, `register`, `implementations`,
`reference`, `to_numpy`, `Supports`; for a user's own tests, `check_callable`
and `assert_callable` judge an unregistered callable as `verify` does, and
return a `Check`.
"""

from __future__ import annotations

from harness.core.api import assert_callable, check_callable
from harness.core.checks import Check
from harness.core.convert import dtype_name, to_numpy
from harness.core.kinds import Kind, reference, tolerance
from harness.core.plugins import PluginError, load_all, load_plugin
from harness.core.registry import REGISTRY, Implementation, register
from harness.core.spec import Spec
from harness.core.supports import Supports

__all__ = [
    "Check", "Implementation", "Kind", "PluginError", "Spec", "Supports", "assert_callable",
    "check_callable", "dtype_name", "implementations", "load_plugin", "reference", "register",
    "to_numpy", "tolerance",
]


def implementations(plugins: tuple[str, ...] | list[str] = ()) -> list[Implementation]:
    """Every registered implementation: built-ins, entry points, env and `plugins`."""
    load_all(plugins)
    return REGISTRY.all()
