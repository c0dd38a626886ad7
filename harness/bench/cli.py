"""`python -m harness bench`: time implementations over a sweep with pytest-benchmark.

Writes RUN_DIR = OUT/<run-id>/ with bench.csv (one row per cell), env.json,
cells.jsonl (the journal --resume reads), raw/*.json (pytest-benchmark's own,
for `pytest-benchmark compare`) and logs/; then runs verify (and conventions,
precision) into it and builds report.md when harness.report exists.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from harness.bench import options, post, sweep
from harness.bench.grid import choose, plan
from harness.bench.results import FILENAME as CSV
from harness.registry import Implementation


def configure(parser: argparse.ArgumentParser) -> None:
    options.configure(parser)


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    opts = options.parse(args)
    chosen = choose(impls, opts.only)
    if not chosen:
        raise ValueError(f"--only {' '.join(opts.only)}: no implementation matches "
                         "(see `python -m harness list`)")
    if opts.dry_run:
        cells = plan(chosen, opts.grid)
        print("\n".join(sweep.describe(cells, sweep.groups(cells.cells))))
        return 0
    run_dir = sweep.open_run(opts, sys.argv, os.cpu_count() or 1)
    rows = sweep.run(opts, chosen, run_dir)
    counts = Counter(r["status"] for r in rows)
    print(f"\nbench: {len(rows)} cells: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for what, where in (("table", CSV), ("environment", "env.json"),
                        ("pytest-benchmark JSON", "raw/"), ("worker logs", "logs/")):
        print(f"  {what}: {run_dir.path / where}")
    if opts.post:
        for step in post.run_all(run_dir.path, opts.plugins, opts.only, opts.quick):
            if step.status == "ok" and step.output:
                print(f"  {step.name}: {step.output}")
    return 0
