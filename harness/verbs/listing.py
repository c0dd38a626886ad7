"""`python -m harness list`: every implementation, its backend, device, conventions, availability.

`--json` prints the same as a JSON array (one object per implementation, with
`reason` null when it is available, and `supports` the declared `Supports`
fields, null for a custom supports callable), for a CI job to read.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from harness.core.registry import Implementation
from harness.core.selection import select
from harness.core.kinds.table.supports import Supports
from harness.util import jsonout, tables

HEADERS = ["name", "kind", "workload", "backend", "device", "conventions", "available"]


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
    chosen = select(impls, args.only)
    if getattr(args, "json", False):
        print(jsonout.dumps([describe(i) for i in chosen]))
        return 0
    rows = [[i.name, i.kind, i.workload, i.backend, i.device, i.conventions,
             "yes" if i.available else f"no: {i.unavailable_reason()}"] for i in chosen]
    print(tables.text(HEADERS, rows))
    backends = sorted({i.backend for i in chosen})
    print(f"\n{len(rows)} implementations; backends: {', '.join(backends)}")
    return 0
