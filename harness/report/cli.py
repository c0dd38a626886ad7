"""`python -m harness report [DIR...]`: rebuild report.md and plots from run directories.

One DIR: its report is rebuilt in place, or in --out when given. Several: a
side-by-side report (one column per machine and run id) is written to --out
(default results/). No DIR: the newest run under --out. `--compare BASE` adds
each cell's change against the BASE run; with `--fail-slower PCT` the command
exits 1 when a cell's median rose by more than both PCT % and the two runs'
IQRs added, and prints those cells.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.registry import Implementation
from harness.report.pipeline import build
from harness.report.compare import broken, changes, check_pct, overlap, slower
from harness.report.load import load_run, newest_run
from harness.report.measures import DEFAULT_BASELINES


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                        help="run directories (default: the newest under --out)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINES["table"], metavar="NAME",
                        help="implementation speedups are quoted against "
                             f"(default {DEFAULT_BASELINES['table']}; forward: "
                             f"{DEFAULT_BASELINES['forward']} unless NAME was timed there)")
    parser.add_argument("--compare", type=Path, metavar="BASE_DIR",
                        help="a base run: show each cell's change of median against it")
    parser.add_argument("--fail-slower", type=float, metavar="PCT",
                        help="with --compare: exit 1 when a cell is slower by more than PCT %% "
                             "and by more than the two runs' IQRs added")


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    """Validate, build the report, then apply the slowdown gate if asked."""
    if args.fail_slower is not None and args.compare is None:
        raise ValueError("--fail-slower needs --compare BASE_DIR")
    if args.fail_slower is not None:
        check_pct(args.fail_slower)
    root = Path(args.out)
    if args.dirs:
        dirs = args.dirs
        out = root if args.out_given or len(dirs) > 1 else None
    else:   # --out is where the runs are: the newest is reported in place
        dirs, out = [newest_run(root)], None
    path = build(dirs, out, baseline=args.baseline, compare=args.compare, only=args.only)
    print(f"wrote {path}")
    if args.fail_slower is None:
        return 0
    base = load_run(args.compare, args.only).bench
    offending: list[tuple[Path, str]] = []  # (run, line to print)
    for d in dirs:
        new = load_run(d, args.only).bench
        overlap(new, base)
        offending += [(d, f"BROKEN {d}: {line}") for line in broken(new, base)]
        offending += [(d, f"SLOWER {d}: {c.describe()}")
                      for c in slower(changes(new, base), args.fail_slower)]
    for _, line in offending:
        print(line)
    if offending:
        print(f"{len(offending)} cell(s) broken, or slower than {args.compare} by more than "
              f"{args.fail_slower:g}% and the runs' spread")
        return 1
    print(f"no cell slower than {args.compare} by more than {args.fail_slower:g}% and the runs' spread")
    return 0
