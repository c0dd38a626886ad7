"""`python -m harness bench`: time implementations over a sweep with pytest-benchmark.

Writes RUN_DIR = OUT/<run-id>/ with bench.csv (one row per cell), env.json,
cells.jsonl (the journal --resume reads), raw/*.json (pytest-benchmark's own,
for `pytest-benchmark compare`) and logs/; then runs verify and precision (their
quick case lists; and, with --full, conventions) into it and builds report.md when harness.report exists. Two runs
started in the same second get RUN_DIR and RUN_DIR-2; the run directory is
locked (.run.lock) until the last post-step ends, so a second writer or a
--resume of a live run is refused. Exits 3 when a post-step failed
(post_failures.json names it, and the report at its top).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from harness.bench import console, options, post, sweep
from harness.bench.grid import Grid, plan
from harness.core import kinds, selection
from harness.core.registry import Implementation
from harness.runs import results
from harness.runs.results import FILENAME as CSV
from harness.util import cpus, exitcodes
from harness.util.exitcodes import UsageError

#: The cli hands bench the implementations' identities and their own `supports` answers to
#: `questions` (harness.core.catalog), never their code: this process plans, supervises and
#: judges what the workers send back where no implementation was imported.
JUDGE_APART = True


def questions(args: argparse.Namespace) -> list[Any]:
    """Every spec the sweep's plan may ask an implementation's `supports` about: each kind's
    lengths x widths x (CPU and GPU) dtypes x conventions, as harness.bench.grid spans them."""
    return specs_of(options.parse(args).grid)


def specs_of(grid: Grid) -> list[Any]:
    found: dict[Any, None] = {}
    for kind in kinds.KINDS.values():
        try:
            shapes = grid.shapes(kind)
        except UsageError:       # none fits: the plan says so if this kind is timed
            continue
        names = (grid.convention,) if grid.convention else tuple(kind.conventions)
        for (length, width), dtype, name in ((s, d, n) for s in shapes
                                             for d in dict.fromkeys((*grid.dtypes_of(kind),
                                                                     *grid.device_dtypes))
                                             for n in names if n in kind.conventions):
            try:
                found.setdefault(kind.bench_spec(length, width, dtype, name))
            except ValueError:   # these axes make no spec of this convention
                continue
    return list(found)


def configure(parser: argparse.ArgumentParser) -> None:
    options.configure(parser)


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    opts = options.parse(args)
    chosen = selection.chosen(impls, opts.only, timing=True)
    if opts.dry_run:
        cells = plan(chosen, opts.grid)
        print("\n".join(sweep.describe(cells, sweep.groups(cells.cells, opts.grid.full))))
        return exitcodes.OK
    run_dir = sweep.open_run(opts, sys.argv, cpus.usable())
    try:
        return _run(opts, chosen, run_dir)
    finally:
        if run_dir.lock is not None:
            run_dir.lock.release()


def _run(opts: options.SweepOptions, chosen: list[Implementation], run_dir: sweep.RunDir) -> int:
    verbs = post_verbs(chosen, opts.grid.full, opts.quick) if opts.post else []
    estimate = post.estimate_together(
        console.post_estimate(opts.out, opts.quick, [*verbs, "report"] if opts.post else []), verbs)
    screen = console.Console(0, estimate, log=sweep.log_path(run_dir.path), verbose=opts.verbose)
    try:
        return _sweep_and_post(opts, run_dir, chosen, verbs, screen)
    finally:
        screen.close()


def _sweep_and_post(opts: options.SweepOptions, run_dir: sweep.RunDir,
                    chosen: list[Implementation], verbs: list[str],
                    screen: console.Console) -> int:
    rows = sweep.run(opts, chosen, run_dir, screen)
    frame = results.tidy(rows, run_dir.run_id, run_dir.machine)
    counts = Counter(frame["status"]) if len(frame) else Counter()
    screen.say(f"bench: {len(frame)} cells: "
               + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
               + f" ({len(rows) - len(frame)} measured again); table {run_dir.path / CSV}")
    if not opts.post:
        return exitcodes.OK
    steps = post.run_all(run_dir.path, opts.plugins, opts.only, opts.quick,
                         keep_fds=run_dir.lock.fds if run_dir.lock else (), verbs=verbs,
                         console=screen, extra=post_scopes(frame))
    screen.close()
    print("\n".join(_answer(run_dir.path)), flush=True)
    failed = [s.name for s in steps if s.failed]
    if failed:
        print(f"bench: post-step {', '.join(failed)} failed (see {run_dir.path / post.FAILURES}); "
              "the timings are complete", file=sys.stderr)
        return exitcodes.HARNESS
    return exitcodes.OK


def _answer(run_dir: Path) -> list[str]:
    """The report's short answer (one line per workload) and where the report is."""
    found = run_dir / results.ANSWER
    lines = found.read_text().splitlines() if found.is_file() else []
    where = [f"report: {run_dir / name}" for name in ("report.md", "report.html")
             if (run_dir / name).is_file()]
    return (["", "answer:", *(f"  {line}" for line in lines)] if lines else []) + where


def verify_scope(frame: pd.DataFrame) -> list[str]:
    """Verify what the sweep timed, in the dtypes it timed them (a --quick sweep's float32
    needs no float16 case, and each dtype costs its Numba kernels a compile), on the quick
    case list and fresh random cases: enough for each pick's grade (its long cases still
    tell `exact` from `float32`); `nox -s verify` checks every case."""
    mine = frame[~frame["is_roof"].astype(bool)] if len(frame) else frame
    if not len(mine):
        return []
    return (["--quick", "--dtypes", ",".join(sorted(set(mine["dtype"].astype(str))))]
            + [a for name in sorted(set(mine["impl"])) for a in ("--only", name)])


def post_scopes(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each post-step's own arguments: verify on what the sweep timed (`verify_scope`), the
    precision study at its quick probes (13 log-spaced windows out to 1e6, not 25: half its
    time, the same curves coarser; `python -m harness precision` runs the full study)."""
    return {"verify": verify_scope(frame), "precision": ["--quick"]}


def post_verbs(chosen: list[Implementation], full: bool = False, quick: bool = False
               ) -> list[str]:
    """The post-steps to run: conventions only with --full (which implementations agree on
    which convention changes no answer of the report, and its probes compile every Numba
    kernel in every variant: the longest post-step, three minutes of a default run;
    `python -m harness conventions` runs it alone), and not when nothing was chosen; roofs
    (the picks and their roofs timed in alternating rounds) not with --quick, a smoke run whose
    small sizes say little about a roof (`python -m harness roofs RUN_DIR` times them)."""
    return [v for v in post.VERBS
            if (v != "conventions" or (chosen and full)) and (v != "roofs" or (chosen and not quick))]
