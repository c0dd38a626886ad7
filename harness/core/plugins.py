"""Where implementations come from: built-ins, entry points, files/modules, an env variable.

Loading order is fixed (built-ins, entry points, PE_HARNESS_PLUGINS, --plugin)
so a run is reproducible. A plugin that fails to import is a clear
`PluginError` naming the plugin, never a traceback from deep inside.
"""

from __future__ import annotations

import hashlib
import importlib
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


def load_builtins() -> None:
    """Import harness.impls (registering every built-in); from a source tree that was never
    installed, load the repository's impls/ folder under that name."""
    try:
        importlib.import_module(BUILTINS)
        return
    except ModuleNotFoundError as exc:
        if exc.name != BUILTINS:
            raise
    folder = Path(__file__).resolve().parents[2] / "impls"
    spec = importlib.util.spec_from_file_location(BUILTINS, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise PluginError(f"the built-in implementations are missing: no {BUILTINS} installed "
                          f"and no {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[BUILTINS] = module
    spec.loader.exec_module(module)


def load_all(extra: list[str] | tuple[str, ...] = ()) -> None:
    """Built-ins, then entry points, then $PE_HARNESS_PLUGINS, then `extra` (--plugin)."""
    load_builtins()
    load_entry_points()
    for target in [*env_plugins(), *extra]:
        load_plugin(target)
