"""Where implementations come from: built-ins, entry points, files/modules, an env variable.

Loading order is fixed (built-ins, entry points, PE_HARNESS_PLUGINS, --plugin)
so a run is reproducible. A plugin that fails to import is a clear
`PluginError` naming the plugin, never a traceback from deep inside.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.util
import os
import sys
import traceback
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

ENTRY_POINT_GROUP = "pe_harness.impls"
ENV_VAR = "PE_HARNESS_PLUGINS"


class PluginError(RuntimeError):
    """A plugin could not be loaded; the message names it and why."""


def load_plugin(target: str) -> ModuleType:
    """Import a plugin given as a .py file path or a dotted module name (imported once)."""
    path = Path(target)
    try:
        if path.suffix == ".py" or path.is_file():
            return _import_file(path)
        return importlib.import_module(target)
    except PluginError:
        raise
    except Exception as exc:
        if isinstance(exc, ModuleNotFoundError) and _is_target(exc, target):
            raise PluginError(f"plugin {target!r}: no such file or module ({exc})") from exc
        # the plugin exists; something it runs or imports failed
        raise PluginError(f"plugin {target!r} failed to import: {describe(exc)}") from exc


def _is_target(exc: ModuleNotFoundError, target: str) -> bool:
    """Whether the missing module is the plugin (or its package), not one the plugin imports."""
    name = exc.name or ""
    return bool(name) and (target == name or target.startswith(name + "."))


def describe(exc: BaseException) -> str:
    """'ModuleNotFoundError: No module named 'x' (at plugin.py:3)': what failed, and where."""
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{exc.filename}:{exc.lineno}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not f.filename.startswith("<") and "importlib" not in f.filename]
        if frames:
            where = f"{frames[-1].filename}:{frames[-1].lineno}"
    return f"{type(exc).__name__}: {exc}" + (f" (at {where})" if where else "")


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise PluginError(f"plugin file {str(path)!r} does not exist")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    name = f"pe_harness_plugin_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def env_plugins() -> list[str]:
    return [t for t in os.environ.get(ENV_VAR, "").split(os.pathsep) if t.strip()]


def any_plugin(targets: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether code from outside the project registers implementations here: `targets`
    (--plugin), $PE_HARNESS_PLUGINS or an installed entry point (listed, not loaded)."""
    return bool(targets or env_plugins() or list(entry_points(group=ENTRY_POINT_GROUP)))


def load_entry_points() -> list[str]:
    """Load every entry point of the group; return the names that loaded."""
    names = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:
            raise PluginError(
                f"entry point {ep.name!r} ({ep.value}) of group {ENTRY_POINT_GROUP} "
                f"failed to load: {describe(exc)}"
            ) from exc
        names.append(ep.name)
    return names


#: The built-in implementations' package: impls/ at the repository root, installed under the
#: project's namespace (pyproject.toml's package-dir), never as a top-level `impls`.
BUILTINS = "harness.impls"


class SourceImpls(importlib.abc.MetaPathFinder):
    """harness.impls from the checkout this harness runs from. An editable install maps it to
    the checkout it was installed from, so a second checkout or a git worktree would register
    the other tree's implementations without a word; a source tree never installed has no
    mapping at all."""

    def __init__(self, folder: Path):
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        if name != BUILTINS:
            return None
        return importlib.util.spec_from_file_location(
            BUILTINS, self.folder / "__init__.py", submodule_search_locations=[str(self.folder)])


def use_source_impls(root: Path = Path(__file__).resolve().parents[2]) -> None:
    """Put SourceImpls first on sys.meta_path when `root` is a checkout (pyproject.toml and
    impls/ beside harness/); an installed wheel has neither, and imports harness.impls as is."""
    folder = root / "impls"
    if (root / "pyproject.toml").is_file() and (folder / "__init__.py").is_file() and not any(
            isinstance(f, SourceImpls) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceImpls(folder))


def load_builtins() -> None:
    """Import harness.impls, registering every built-in."""
    try:
        importlib.import_module(BUILTINS)
    except ModuleNotFoundError as exc:
        if exc.name != BUILTINS:
            raise
        raise PluginError(f"the built-in implementations are missing: no {BUILTINS} installed "
                          "and no impls/ beside harness/") from None


def load_all(extra: list[str] | tuple[str, ...] = ()) -> None:
    """Built-ins, then entry points, then $PE_HARNESS_PLUGINS, then `extra` (--plugin)."""
    load_builtins()
    load_entry_points()
    for target in [*env_plugins(), *extra]:
        load_plugin(target)
