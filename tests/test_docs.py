"""What the code and the docs point a reader to exists: documents, links, module paths.

Modules used to say "see DESIGN.md" with no such file in the repository; these
tests fail on the next reference that leads nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
#: A document named in code: a path with a folder (docs/fast.md), or a top-level NAME.md.
CITED_DOC = re.compile(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.md|[A-Z][A-Z_]+\.md)\b")
#: Markdown links to local files.
LINK = re.compile(r"\]\((?!https?:|#)([^)#\s]+)")
#: Repository paths a document names: harness/..., impls/..., tests/..., docs/...
REPO_PATH = re.compile(r"(?<![\w./-])((?:harness|impls|tests|docs)/[\w/.-]*[\w/])")


def _sources() -> list[Path]:
    """The code, this file (whose examples are not references) left out."""
    return sorted(p for folder in ("harness", "impls", "tests") for p in (ROOT / folder).rglob("*.py")
                  if p.resolve() != Path(__file__).resolve())


def test_every_document_the_code_cites_exists():
    missing = [f"{path.relative_to(ROOT)}: {name}" for path in _sources()
               for name in CITED_DOC.findall(path.read_text())
               if not (ROOT / name).exists()]
    assert not missing, missing


@pytest.mark.parametrize("doc", ["README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))])
def test_links_in_the_docs_lead_somewhere(doc):
    path = ROOT / doc if doc == "README.md" else ROOT / "docs" / doc
    broken = [target for target in LINK.findall(path.read_text())
              if not (path.parent / target).exists()]
    assert not broken, broken


def test_design_names_only_paths_that_exist():
    named = set(REPO_PATH.findall(DESIGN.read_text()))
    assert {"harness/bench/modes.py", "harness/backends/base.py", "tests/oracle.py"} <= named
    assert not [p for p in named if not (ROOT / p).exists()]


def test_design_layers_name_real_modules():
    """Every module in the Layers table is a module or package of harness (or the adapters)."""
    section = DESIGN.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    names = {n for row in rows for n in re.findall(r"`([\w/]+?)/?`", row.split("|")[2])}
    assert len(names) > 25
    def real(name: str) -> bool:   # a module or package anywhere in harness/, or a repo path
        path = ROOT / name.rstrip("/")
        return (path.is_dir() or path.with_suffix(".py").exists()
                or any((ROOT / "harness").rglob(f"{name}.py"))
                or any((ROOT / "harness").rglob(f"{name}/__init__.py")))

    missing = [n for n in names if "*" not in n and not real(n)]
    assert not missing, missing


def test_design_says_how_to_add_each_kind_of_thing():
    text = DESIGN.read_text()
    for heading in ("### A backend", "### A kind of table", "### A verb", "### GPU timing modes"):
        assert heading in text
    assert "harness/backends/__init__.py" in text
