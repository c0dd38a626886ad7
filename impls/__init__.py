"""Built-in implementations, one module per backend (and per kind of table).

Importing this package registers them all: every module here whose name does not start
with "_" is imported, so a new module is picked up without an edit here. No module imports
its backend at import time: each factory imports what it needs, so a missing backend makes
its implementations unavailable, not the package unimportable.
"""

import importlib as _importlib
import pkgutil as _pkgutil

for _module in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _module.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_module.name}")
