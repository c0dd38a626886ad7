"""Sections that show what other verbs left in a run directory: conventions, precision, raw files.

These outputs belong to `conventions`, `precision`, `verify` and `bench`; the
report links or embeds them as they are and depends on nothing but their names.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.report import markdown
from harness.report.load import Run

MAX_ROWS = 60


def conventions(run: Run, out: Path) -> str:
    """The convention matrix: conventions.md embedded, else conventions.csv as a table."""
    md, csv = run.extra("conventions.md"), run.extra("conventions.csv")
    if md is None and csv is None:
        return ""
    sources = [p for p in (md, csv, run.extra("convention_distances.csv")) if p is not None]
    blocks = [markdown.heading(2, "Convention matrix"),
              "Which implementations produce the same table (from `python -m harness conventions`)."]
    if md is not None:
        blocks.append(markdown.embed(md.read_text(), level=2))
    elif csv is not None:
        frame = pd.read_csv(csv, keep_default_na=False).astype(str)
        blocks.append(markdown.table(frame.head(MAX_ROWS), index=False))
    blocks.append("Source: " + ", ".join(markdown.link(p, out, p.name) for p in sources))
    return markdown.join(*blocks)


def precision(run: Run, out: Path) -> str:
    """The precision study (`python -m harness precision`): its notes, plot and CSV."""
    md, csv, png = (run.extra(n) for n in ("precision.md", "precision.csv", "plots/precision.png"))
    if not (md or csv or png):
        return ""
    blocks = [markdown.heading(2, "Precision"),
              "Error vs position per dtype and approach (from `python -m harness precision`)."]
    notes = md.read_text() if md is not None else ""
    if png is not None and png.name not in notes:  # precision.md may show the plot itself
        blocks.append(markdown.image(png, out, "precision: error vs position"))
    if notes:
        blocks.append(markdown.embed(notes, level=2))
    if csv is not None:
        blocks.append("Data: " + markdown.link(csv, out, csv.name))
    return markdown.join(*blocks)


def files(run: Run, out: Path) -> str:
    """Links to the run's raw material."""
    names = ("bench.csv", "env.json", "verify.csv", "verify.md", "raw")
    found = [markdown.link(p, out, p.name + ("/" if p.is_dir() else ""))
             for p in (run.extra(n) for n in names) if p is not None]
    note = ("`raw/` holds pytest-benchmark's JSON: `pytest-benchmark compare` works on it."
            if run.extra("raw") else "")
    return markdown.join(markdown.heading(2, "Files"), " · ".join(found), note)


def post_failures(run: Run) -> str:
    """Bench's post-steps that failed (post_failures.json): named first, their results missing."""
    import json

    path = run.extra("post_failures.json")
    failed = json.loads(path.read_text()) if path is not None else []
    return "\n\n".join(f"**Warning: post-step `{f['step']}` failed** ({f['detail']}, log "
                       f"`{f['log']}`): its results are missing or incomplete below." for f in failed)
