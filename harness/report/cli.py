"""`python -m harness report [DIR...]`: rebuild report.md and plots from run directories.

One DIR: its report is rebuilt in place, or in --out when given. Several: a
side-by-side report (one column per machine and run id) is written to --out
(default results/). No DIR: the newest run under --out. A run whose bench.csv
is behind its journal (cells.jsonl) is reported from the journal, with a
warning; one with no rows is refused and its report.md left alone.
`--convention NAME` (default paper: interleaved, freq_shift 0) recommends only
implementations that verify found building that table. `--compare BASE` adds each cell's change against the BASE run, prints how
many cells it compared and exits 2 when the runs share fewer than
--min-shared % of either run's cells; with `--fail-slower PCT` the command
exits 1 when a cell's median rose by more than PCT % and by more than the noise
between the two runs explains (harness.report.noise, printed per group of cells)
and a rank test on the two runs' raw rounds says the rise is real
(harness.report.gate), and prints those cells; runs from different machines (CPU, cores, GPU) are refused by the gate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.core.registry import Implementation
from harness.report import convention
from harness.report.compare import (MIN_SHARED_PCT, broken, changes, check_min_shared, check_pct,
                                    decide, overlap)
from harness.report.gate import machine_differences, thread_difference
from harness.report.load import load_env, load_run, newest_run
from harness.report.measures import DEFAULT_BASELINES, DEVICE_BASELINES
from harness.util.exitcodes import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                        help="run directories (default: the newest under --out)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINES["table"], metavar="NAME",
                        help="the usual choice speedups are quoted against, where NAME was timed "
                             f"(default {DEFAULT_BASELINES['table']}; elsewhere each device's own: "
                             f"{', '.join(f'{b[0]} ({w}, {d})' for (w, d), b in DEVICE_BASELINES.items())})")
    parser.add_argument("--convention", default=convention.PAPER, choices=convention.names(),
                        metavar="NAME",
                        help="recommend implementations that build this convention's table: "
                             f"{', '.join(convention.names())} (default {convention.PAPER}: "
                             "interleaved, freq_shift 0, offset 0)")
    parser.add_argument("--compare", type=Path, metavar="BASE_DIR",
                        help="a base run: show each cell's change of median against it")
    parser.add_argument("--fail-slower", type=float, metavar="PCT",
                        help="with --compare: exit 1 when a cell is slower by more than PCT %% "
                             "and a rank test on the raw rounds agrees (refused across machines)")
    parser.add_argument("--min-shared", type=float, default=MIN_SHARED_PCT, metavar="PCT",
                        help="with --compare: fail (exit 2) when the runs share fewer than PCT %% "
                             f"of either run's cells (default {MIN_SHARED_PCT:g})")


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    """Validate, build the report, then apply the slowdown gate if asked."""
    if args.fail_slower is not None and args.compare is None:
        raise UsageError("--fail-slower needs --compare BASE_DIR")
    if args.fail_slower is not None:
        check_pct(args.fail_slower)
    check_min_shared(args.min_shared)
    root = Path(args.out)
    if args.dirs:
        dirs = args.dirs
        out = root if args.out_given or len(dirs) > 1 else None
    else:   # --out is where the runs are: the newest is reported in place
        dirs, out = [newest_run(root)], None
    if args.compare is not None:
        _same_machine(dirs, args.compare, gating=args.fail_slower is not None)
    from harness.report.pipeline import build   # matplotlib: only when a report is built

    path = build(dirs, out, baseline=args.baseline, compare=args.compare, only=args.only,
                 min_shared=args.min_shared, convention_name=args.convention)
    runs = {d: load_run(d, args.only) for d in dirs}
    base = load_run(args.compare, args.only) if args.compare is not None else None
    for run in [*runs.values(), *([base] if base else [])]:
        if run.note:
            print(f"warning: {run.note}", file=sys.stderr)
    print(f"wrote {path}")
    if base is None:
        return 0
    for d, run in runs.items():
        print(f"{d} vs {args.compare}: {overlap(run.bench, base.bench).describe()}")
        threads = thread_difference(run.bench, base.bench)
        if threads:
            print(f"warning: {threads}", file=sys.stderr)
    if args.fail_slower is None:
        return 0
    offending: list[str] = []
    judged = 0
    for d, run in runs.items():
        decision = decide(changes(run.bench, base.bench), args.fail_slower)
        print("\n".join(decision.describe(args.fail_slower)))
        judged += decision.judged
        offending += [f"BROKEN {d}: {line}" for line in broken(run.bench, base.bench)]
        offending += [f"SLOWER {d}: {c.describe()}" for c in decision.slower]
    for line in offending:
        print(line)
    rule = (f"by more than {args.fail_slower:g}% and the noise between the runs, its "
            "implementation's other cells and a rank test on the rounds agreeing")
    if offending:
        print(f"{len(offending)} cell(s) broken, or slower than {args.compare} {rule}")
        return 1
    print(f"no cell broken; of {judged} judged for speed, none slower than {args.compare} {rule}")
    return 0


def _same_machine(dirs: list[Path], base_dir: Path, gating: bool) -> None:
    """Refuse a gate across machines (it would judge the machines); warn for a plain compare."""
    base_env = load_env(base_dir)
    for d in dirs:
        found = machine_differences(load_env(d), base_env)
        if not found:
            continue
        what = f"{d} and {base_dir} were measured on different machines ({'; '.join(found)})"
        if gating:
            raise UsageError(f"--fail-slower: {what}: a speed gate across machines judges the "
                             "machines, not the code; compare runs from one machine")
        print(f"warning: {what}; their times are not comparable", file=sys.stderr)
