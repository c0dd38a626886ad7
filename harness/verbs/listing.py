"""`python -m harness list`: every implementation, its backend, device, conventions, availability.

The table fits WIDTH characters: a long conventions text is cut (with `...`), and
the reason an implementation is unavailable is a numbered note below the table,
one per distinct reason (most share one: a library not installed, no GPU).
`--json` prints the same as a JSON array (one object per implementation, with
`reason` null when it is available, and `supports` the declared `Supports`
fields, null for a custom supports callable), for a CI job to read.
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import asdict
from typing import Any

from harness.core.registry import Implementation
from harness.core import selection
from harness.core.kinds.table.supports import Supports
from harness.util import jsonout, tables

HEADERS = ["name", "kind", "workload", "backend", "device", "available", "conventions"]
#: The widest line of the table (a terminal's width with room to spare).
WIDTH = 120


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print a JSON array of implementations instead of the table")


def describe(impl: Implementation) -> dict[str, Any]:
    """What `list --json` says of one implementation."""
    reason = impl.unavailable_reason()
    declared = impl.supports_fn
    return {"name": impl.name, "backend": impl.backend, "device": impl.device,
            "kind": impl.kind, "workload": impl.workload, "library": impl.library,
            "library_version": impl.library_version, "conventions": impl.conventions,
            "supports": asdict(declared) if isinstance(declared, Supports) else None,
            "available": reason is None, "reason": reason}


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    chosen = selection.chosen(impls, args.only)
    if getattr(args, "json", False):
        print(jsonout.dumps([describe(i) for i in chosen]))
        return 0
    notes: dict[str, int] = {}
    rows = []
    for i in chosen:
        reason = i.unavailable_reason()
        note = notes.setdefault(reason, len(notes) + 1) if reason else 0
        rows.append([i.name, i.kind, i.workload, i.backend, i.device,
                     f"no ({note})" if note else "yes", i.conventions])
    print(fit(tables.text(HEADERS, rows), WIDTH))
    backends = sorted({i.backend for i in chosen})
    print(textwrap.fill(f"\n{len(rows)} implementations; backends: {', '.join(backends)}; "
                        "conventions in full: list --json", WIDTH, replace_whitespace=False))
    for reason, n in notes.items():
        print(textwrap.fill(f"({n}) {reason}", WIDTH, subsequent_indent="    "))
    return 0


def fit(text: str, width: int) -> str:
    """Each line cut at `width` characters, ending in '...' where it was cut."""
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..."
                     for line in text.splitlines())
