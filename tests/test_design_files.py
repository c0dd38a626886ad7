"""docs/design.md's lists of the files a kind, a backend and a verb take hold for every built-in
kind, backend and verb."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.core import kinds

ROOT = Path(__file__).resolve().parents[1]
DESIGN = (ROOT / "docs" / "design.md").read_text()


def section(title: str) -> str:
    return DESIGN.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]


def listed(text: str, placeholder: str) -> list[str]:
    """The indented path lines of a section that name `placeholder`."""
    return [m.group(1) for m in re.finditer(rf"^    (\S*{placeholder}\S*)", text, re.M)]


SECTION = section("A kind of table")
#: the indented path lines of the section: (path with <kind>, whether it is optional)
LISTED = [(m.group(1), "optionally" in SECTION[:m.start()])
          for m in re.finditer(r"^    (\S*<kind>\S*)", SECTION, re.M)]
BUILT_IN = ("table", "rotary", "grid", "timestep")


def test_the_section_lists_the_files():
    required = [path for path, optional in LISTED if not optional]
    assert "harness/core/kinds/<kind>/spec.py" in required and "impls/<kind>/" in required
    assert [path for path, optional in LISTED if optional]


@pytest.mark.parametrize("kind", BUILT_IN)
def test_every_built_in_kind_has_the_files_listed(kind):
    assert kind in kinds.KINDS
    for path, optional in LISTED:
        where = ROOT / path.replace("<kind>", kind)
        if not optional:
            assert where.exists(), f"docs/design.md says a kind takes {path}; {kind} has no {where}"
    module = __import__(f"harness.core.kinds.{kind}.spec", fromlist=["RULES"])
    assert module.RULES, f"{kind}'s spec declares no field rules"


def test_the_optional_files_are_named_where_the_verbs_look():
    """A kind's reader and studies are its Kind's slots, and each slot names the file listed."""
    from harness.identify.readers.dispatch import ONE_D, READERS
    from harness.verbs.precision import studies

    for name in BUILT_IN:
        kind = kinds.named(name)
        has_reader = (ROOT / "harness" / "identify" / "readers" / f"{name}.py").exists()
        assert has_reader == bool(kind.reader) or name == ONE_D
        assert (name in READERS) == bool(kind.reader)
        if kind.reader:
            assert kind.reader == f"harness.identify.readers.{name}"
        has_study = (ROOT / "harness" / "verbs" / "precision" / f"{name}.py").exists()
        assert has_study == (bool(kind.studies) or name == "table")   # the table's study is the verb's own
        assert (name in studies.KINDS) == bool(kind.studies)
        if kind.studies:
            assert f"harness.verbs.precision.{name}" in kind.studies


#: the modules of harness/backends that are no backend's adapter
SHARED = {"__init__", "base", "host", "cuda_driver"}
BACKEND_MODULES = sorted(p.stem for p in (ROOT / "harness" / "backends").glob("*.py") if p.stem not in SHARED)


def test_the_backend_section_lists_the_files():
    paths = listed(section("A backend"), "<backend>")
    assert paths == ["harness/backends/<backend>.py", "impls/<kind>/<backend>.py"]
    assert "harness/backends/__init__.py" in section("A backend")


@pytest.mark.parametrize("module", BACKEND_MODULES)
def test_every_built_in_backend_has_the_files_listed(module):
    from harness import backends

    adapter = __import__(f"harness.backends.{module}", fromlist=["BACKEND"]).BACKEND
    assert backends.ADAPTERS[adapter.name] is adapter, f"{module} is not named in harness/backends/__init__.py"
    builds = [kind for kind in BUILT_IN if (ROOT / "impls" / kind / f"{module}.py").exists()]
    assert builds, f"docs/design.md says a backend has impls/<kind>/{module}.py; {module} has none"


def test_every_built_in_verb_has_the_files_listed():
    from harness import cli

    text = section("A verb")
    assert listed(text, "<verb>") == ["harness/verbs/<verb>.py"] and "harness/cli.py" in text
    for verb, (module, _) in cli.VERBS.items():
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").exists() or (path / "__init__.py").exists(), verb
        top = module.split(".")[1]
        assert top == "verbs" or f"{top}," in text or f"{top}\n" in text or f" {top} " in text, \
            f"{verb} lives in harness/{top}/, which the section does not name"
