"""docs/design.md's list of the files a kind takes holds for every built-in kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.core import kinds

ROOT = Path(__file__).resolve().parents[1]
SECTION = (ROOT / "docs" / "design.md").read_text().split("### A kind of table", 1)[1].split("\n### ", 1)[0]
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
