"""The package installs what the tree holds, and the built-ins under the project's namespace."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_in_the_tree_is_installed_and_impls_only_as_harness_impls():
    config = _config()
    tree = {".".join(p.parent.relative_to(ROOT).parts) for folder in ("harness", "impls")
            for p in (ROOT / folder).rglob("__init__.py")}
    installed = {name.replace("harness.impls", "impls", 1) if name.startswith("harness.impls") else name
                 for name in config["packages"]}
    assert installed == tree
    assert config["package-dir"] == {"harness.impls": "impls"}
    assert not [name for name in config["packages"] if name.split(".")[0] == "impls"]


def test_the_builtins_register_under_the_project_namespace():
    import harness

    origins = {impl.origin for impl in harness.implementations()}
    assert "harness.impls.table.numpy" in origins and "harness.impls.rotary.numba" in origins
    assert not [o for o in origins if o.split(".")[0] == "impls"]


def test_impls_has_one_folder_per_kind_and_the_old_module_names_still_import():
    import importlib

    import harness
    from harness.core import kinds
    from harness.impls import _aliases

    harness.implementations()
    folders = {p.name for p in (ROOT / "impls").iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders - {"libraries", "__pycache__"} == set(kinds.KINDS)
    assert not [p.name for p in (ROOT / "impls").glob("*.py") if not p.name.startswith("_")]
    for old, new in _aliases.OLD_NAMES.items():
        new = new if new.startswith("harness.") else f"harness.impls.{new}"
        try:
            module = importlib.import_module(new)
        except ModuleNotFoundError:    # a kernel module that imports its absent backend
            continue
        assert importlib.import_module(f"harness.impls.{old}") is module
        assert module.__spec__.name == module.__name__ == new


def test_the_table_modules_moved_into_its_kind_keep_their_old_names():
    import importlib

    from harness.core import MOVED

    for old, new in MOVED.items():
        module = importlib.import_module(new)
        assert importlib.import_module(old) is module and module.__spec__.name == new
    assert not [p for p in (ROOT / "harness" / "core").glob("*.py") if p.stem in {o.split(".")[-1] for o in MOVED}]
