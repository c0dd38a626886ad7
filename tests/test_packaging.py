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
    assert "harness.impls.numpy_impls" in origins and "harness.impls.rotary_numba" in origins
    assert not [o for o in origins if o.split(".")[0] == "impls"]
