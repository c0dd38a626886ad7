"""pe-harness: verify, time and identify sinusoidal positional encodings.

Public contract (docs and README): the specs of every kind (`Spec` for the 1-D table,
`RotarySpec`, `GridSpec`, `TimestepSpec`) and `spec_from_dict` to rebuild any of them from
its printed fields; `register`, `implementations`, `reference` and `tolerance` (any kind's),
`to_numpy`; each kind's declarative supports (`Supports` for the 1-D table, `RotarySupports`,
`GridSupports`, `TimestepSupports`, each a `BaseSupports`: dtypes and a size cap); `ApplyForms`
(the rotary apply forms an implementation declares) and `InPlace` (what an in-place kernel's
factory returns); for a user's own tests, `check_callable` and `assert_callable` judge an
unregistered callable as `verify` does, and return a `Check` (with the `grade` it met).
"""

from __future__ import annotations

from harness.core.plugins import use_source_impls

use_source_impls()   # before anything imports harness.impls: this checkout's, never another's

from harness.core.api import assert_callable, check_callable
from harness.core.checks import Check
from harness.core.convert import dtype_name, to_numpy
from harness.core.kinds import Kind, Workload, reference, spec_dict, spec_from_dict, tolerance
from harness.core.kinds.grid import GridSpec
from harness.core.inplace import InPlace
from harness.core.kinds.grid.supports import GridSupports
from harness.core.kinds.rotary import ApplyForms, RotarySpec
from harness.core.kinds.rotary.supports import RotarySupports
from harness.core.kinds.supports import BaseSupports
from harness.core.kinds.timestep import TimestepSpec
from harness.core.kinds.timestep.supports import TimestepSupports
from harness.core.plugins import PluginError, load_all, load_plugin
from harness.core.registry import REGISTRY, Implementation, register
from harness.core.kinds.table.spec import Spec
from harness.core.kinds.table.supports import Supports
from harness.util.exitcodes import UsageError

__all__ = [
    "ApplyForms", "BaseSupports", "Check", "GridSpec", "GridSupports", "Implementation", "InPlace",
    "Kind", "PluginError", "RotarySpec", "RotarySupports", "Spec", "Supports", "TimestepSpec",
    "TimestepSupports", "UsageError", "Workload", "assert_callable", "check_callable", "dtype_name",
    "implementations", "load_plugin", "reference", "register", "spec_dict", "spec_from_dict",
    "to_numpy", "tolerance",
]


def implementations(plugins: tuple[str, ...] | list[str] = ()) -> list[Implementation]:
    """Every registered implementation: built-ins, entry points, env and `plugins`."""
    load_all(plugins)
    return REGISTRY.all()
