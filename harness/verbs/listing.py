"""`python -m harness list`: every implementation, its backend, device, availability, forms, conventions.

The table fits WIDTH characters: a long conventions text is cut (with `...`), and
the reason an implementation is unavailable is a numbered note below the table,
one per distinct reason (most share one: a library not installed, no GPU). A rotary
apply's declared forms (`ApplyForms`) are one letter each, as `ls -l` shows
permissions (`FORM_LETTERS`, explained under the table): five columns say what a
sentence would take forty for.
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
from harness.core.kinds.rotary.forms import ApplyForms
from harness.core.kinds.table.supports import Supports
from harness.util import jsonout, tables

HEADERS = ["name", "kind:workload", "backend", "dev", "avail", "forms", "conventions"]
#: The widest line of the table (a terminal's width with room to spare).
WIDTH = 100
#: A rotary apply's forms, a letter each where declared and "-" where not (in this order).
FORM_LETTERS = (("h", "q, k heads first [b, h, s, d]", lambda f: "bhsd" in f.layouts),
                ("s", "sequence first [b, s, h, d]", lambda f: "bshd" in f.layouts),
                ("g", "k with fewer heads (GQA)", lambda f: f.gqa),
                ("b", "position ids [batch, seq]", lambda f: f.batch_positions),
                ("i", "in place", lambda f: f.in_place))


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
        workload = i.kind if i.workload == i.kind else f"{i.kind}:{i.workload}"
        rows.append([i.name, workload, i.backend, i.device, f"no ({note})" if note else "yes",
                     form_letters(i.forms_declared), i.conventions])
    print(fit(tables.text(HEADERS, rows), WIDTH))
    backends = sorted({i.backend for i in chosen})
    print(textwrap.fill(f"\n{len(rows)} implementations; backends: {', '.join(backends)}; "
                        "conventions in full: list --json", WIDTH, replace_whitespace=False))
    if any(row[5] for row in rows):
        legend = ", ".join(f"{letter} {meaning}" for letter, meaning, _ in FORM_LETTERS)
        print(textwrap.fill(f"forms of rotary apply: {legend}", WIDTH, subsequent_indent="    "))
    for reason, n in notes.items():
        print(textwrap.fill(f"({n}) {reason}", WIDTH, subsequent_indent="    "))
    return 0


def form_letters(forms: Any) -> str:
    """A rotary apply's declared forms as FORM_LETTERS ("hsgbi": every form, in place); "" for
    an implementation whose workload has one form."""
    if not isinstance(forms, ApplyForms):
        return ""
    return "".join(letter if declared(forms) else "-" for letter, _, declared in FORM_LETTERS)


def fit(text: str, width: int) -> str:
    """Each line cut at `width` characters, ending in '...' where it was cut."""
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..."
                     for line in text.splitlines())
