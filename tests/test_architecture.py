"""The layering of harness/, checked on the import statements themselves (ast, nothing runs).

Layers, each importing only those before it: backends, util, core, runs (the run directory's
formats), then the verbs. No verb imports another: what two verbs share lives in a layer
above them (issue 11: selection, named conventions, the long-position threshold, the flags).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parent.parent / "harness"
LAYERS = ("backends", "util", "core", "runs")
#: verb -> the modules (under harness/) that make it up
VERBS = {"verify": ("verbs/verify",), "list": ("verbs/listing",),
         "precision": ("verbs/precision",), "conventions": ("verbs/conventions",),
         "bench": ("bench",), "report": ("report",), "identify": ("identify",)}


def unit_of(path: Path) -> str:
    """'core', 'util', ..., or the verb a module belongs to; 'top' for harness/*.py."""
    rel = path.relative_to(HARNESS).with_suffix("").as_posix()
    for verb, parts in VERBS.items():
        if any(rel == p or rel.startswith(p + "/") for p in parts):
            return verb
    first = rel.split("/")[0]
    return first if first in LAYERS else "top"


def imported_units(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [f"{node.module}.{a.name}" for a in node.names]
                 if isinstance(node, ast.ImportFrom) and node.module else [])
        for name in names:
            if name.startswith("harness."):
                target = HARNESS.joinpath(*name.split(".")[1:])
                for candidate in (target.with_suffix(".py"), target / "__init__.py",
                                  target.parent.with_suffix(".py"), target.parent / "__init__.py"):
                    if candidate.exists() and candidate.is_relative_to(HARNESS):
                        found.add(unit_of(candidate))
                        break
    return found


MODULES = sorted(p for p in HARNESS.rglob("*.py") if p.parent != HARNESS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(HARNESS).as_posix())
def test_each_module_imports_only_its_layer_and_those_before_it(path):
    unit = unit_of(path)
    allowed = set(LAYERS[:LAYERS.index(unit) + 1]) if unit in LAYERS else {*LAYERS, unit}
    wrong = imported_units(path) - allowed - {"top"}
    assert not wrong, f"{unit} imports {sorted(wrong)}"


def test_the_verbs_are_all_found():
    assert {unit_of(p) for p in MODULES} >= set(VERBS) | set(LAYERS)
