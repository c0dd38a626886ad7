"""`python -m harness list`: every implementation, its backend, device, conventions, availability."""

from __future__ import annotations

import argparse

from harness import tables
from harness.registry import Implementation
from harness.verify import select

HEADERS = ["name", "workload", "backend", "device", "conventions", "available"]


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    chosen = select(impls, args.only)
    rows = [[i.name, i.workload, i.backend, i.device, i.conventions,
             "yes" if i.available else f"no: {i.unavailable_reason()}"] for i in chosen]
    print(tables.text(HEADERS, rows))
    backends = sorted({i.backend for i in chosen})
    print(f"\n{len(rows)} implementations; backends: {', '.join(backends)}")
    return 0
