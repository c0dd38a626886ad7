"""Built-in implementations: `impls/<kind>/<backend>.py`, mirroring harness/core/kinds/.

Importing this package registers them all: every module under it whose name does not start
with "_" is imported, at any depth, so a new module (or a new kind's folder) is picked up
without an edit here. `_`-named modules hold what one kind's backends share and register
nothing. No module imports its backend at import time: each factory imports what it needs, so
a missing backend makes its implementations unavailable, not the package unimportable.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from ._aliases import install as _install_aliases


def _import_all(package_name: str, path) -> None:
    """Import every public module and package under `path`, depth first, in name order."""
    for module in sorted(_pkgutil.iter_modules(path), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        imported = _importlib.import_module(f"{package_name}.{module.name}")
        if module.ispkg:
            _import_all(imported.__name__, imported.__path__)


_import_all(__name__, __path__)
_install_aliases(__name__)
