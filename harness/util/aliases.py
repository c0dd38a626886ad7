"""Old module names that import as the module now at a new name (aliases for one release).

A moved module keeps its history under its new name and leaves no file behind; an
`AliasFinder` on `sys.meta_path` answers the old name with the very module object of the
new one (so a monkeypatch through either name is seen by both), imported on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from typing import Mapping


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old dotted name and loads it as the module at its new name."""

    def __init__(self, targets: Mapping[str, str]):
        self.targets = dict(targets)
        self.specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.targets:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self.targets[spec.name])
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Run nothing (the module ran under its new name); give back the spec import replaced."""
        module.__spec__ = self.specs[module.__spec__.name]


def install(targets: Mapping[str, str]) -> None:
    """Let each old dotted name in `targets` import as its new one (idempotent)."""
    for finder in sys.meta_path:
        if isinstance(finder, AliasFinder) and finder.targets == dict(targets):
            return
    sys.meta_path.append(AliasFinder(targets))
