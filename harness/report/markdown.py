"""Markdown building blocks: frames as tables, headings, links, images and embedded documents.

Tables go through `harness.util.tables.markdown`, the project's one renderer; this
module only adapts pandas frames to it and keeps every link relative to the
report, so a report directory can be moved or committed as it is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from harness.util import tables


def table(frame: pd.DataFrame, index: bool = True) -> str:
    """`frame` (cells already formatted) as a GitHub table; the index becomes the first column."""
    if index:
        frame = frame.reset_index()
    frame = frame.fillna("")
    return tables.markdown([str(c) for c in frame.columns], list(frame.itertuples(index=False)))


def heading(level: int, text: str) -> str:
    return "#" * level + " " + text


def link(target: Path, report_dir: Path, text: str | None = None) -> str:
    rel = Path(os.path.relpath(target, report_dir)).as_posix()
    return f"[{text or rel}]({rel})"


def image(target: Path, report_dir: Path, alt: str) -> str:
    return "!" + link(target, report_dir, alt)


def embed(text: str, level: int) -> str:
    """Another verb's markdown inside a section of depth `level`: its title dropped (the section
    has one), its shallowest remaining headings one level below the section's."""
    body = text.strip().splitlines()
    if body and body[0].startswith("# "):
        body = body[1:]
    depths, fenced = [], False
    for line in body:
        fenced ^= line.lstrip().startswith("```")
        match = None if fenced else re.match(r"(#{1,6}) ", line)
        depths.append(len(match.group(1)) if match else 0)
    shift = level + 1 - min((d for d in depths if d), default=level + 1)
    return "\n".join("#" * min(6, d + shift) + line[d:] if d else line
                     for line, d in zip(body, depths))


def join(*blocks: str) -> str:
    """Blocks separated by one blank line, empty blocks dropped."""
    return "\n\n".join(b.strip("\n") for b in blocks if b and b.strip()) + "\n"
