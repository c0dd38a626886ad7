"""The bench command line, validated into one frozen `SweepOptions`.

Every bad value is a ValueError that names the option and its allowed range;
the CLI turns it into one line and exit code 2, before anything runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from harness.bench.grid import (DEFAULT_D_MODELS, DEFAULT_LENGTHS, DEFAULT_MAX_ELEMENTS,
                                DEVICE_DTYPES, QUICK_D_MODELS, QUICK_LENGTHS, Grid, default_grid)
from harness.bench.modes import MODES, QUICK_MODES
from harness.bench.remeasure import MAX_ATTEMPTS
from harness.bench.settings import QUICK_LIMITS, QUICK_TIMING, Limits, Timing
from harness.core import kinds
from harness.core.kinds.fields import DTYPES
from harness.runs import journal
from harness.util import cpus
from harness.util.arguments import at_least as _at_least
from harness.util.arguments import positive_seconds as _positive
from harness.util.exitcodes import UsageError

NEWEST = "newest"
TIMING, LIMITS = Timing(), Limits()


@dataclass(frozen=True)
class SweepOptions:
    """What to sweep, how to time it, when to give up, and where results go."""

    grid: Grid
    timing: Timing
    limits: Limits
    out: Path
    resume: Optional[Path]
    plugins: tuple[str, ...]
    only: tuple[str, ...]
    quick: bool
    post: bool
    dry_run: bool
    attempts: int = MAX_ATTEMPTS
    verbose: bool = False


def configure(parser: argparse.ArgumentParser) -> None:
    """Add bench's options (--plugin, --only, --out and --quick come from the CLI)."""
    grid = parser.add_argument_group("sweep axes (comma-separated lists)")
    grid.add_argument("--lengths", metavar="N,..", help="positions, grid cells or timesteps, for "
                      "every kind, timed in every combination with the widths (default: a few "
                      "landmark shapes of each kind's own axes, one per size regime; a 1-D "
                      f"table's axes are {_csv(DEFAULT_LENGTHS)}, --quick {_csv(QUICK_LENGTHS)})")
    grid.add_argument("--d-models", metavar="D,..", help="even widths (d_model, head_dim, dim) for "
                      f"every kind (default: as --lengths; a 1-D table's {_csv(DEFAULT_D_MODELS)}, "
                      f"--quick {_csv(QUICK_D_MODELS)})")
    grid.add_argument("--dtypes", metavar="T,..", help=f"CPU dtypes, of {_csv(DTYPES)} (default: "
                      "each kind's own; float32,float64 for most; --quick float32)")
    grid.add_argument("--threads", metavar="N,..",
                      help="thread counts (default 1 and all the CPUs this process may use: "
                      "its affinity, capped by its cgroup quota)")
    grid.add_argument("--workloads", metavar="W,..", help=f"of {_csv(kinds.all_workloads())} (default all)")
    grid.add_argument("--device-dtypes", metavar="T,..", help="dtypes of GPU cells, of "
                      f"{_csv(DTYPES)} (default {_csv(DEVICE_DTYPES)})")
    grid.add_argument("--modes", metavar="M,..", help=f"how GPU cells are timed, of {_csv(MODES)} "
                      f"(default all; --quick {_csv(QUICK_MODES)}; see harness.bench.modes)")
    grid.add_argument("--full", action="store_true",
                      help="every combination of each kind's sizes, and JIT implementations' first "
                      "calls each in a fresh process, and the conventions study after the sweep "
                      "(by default: a landmark shape per kind and size regime, small, medium and large, one "
                      "worker per backend, and no conventions post-step)")
    grid.add_argument("--batch", type=int,
                      help="batch of x for forward and of q, k for rotary apply (default: each "
                      f"workload's own, {_bench_sizes('bench_batch', 'batched')})")
    grid.add_argument("--heads", type=int,
                      help="attention heads of q and k for rotary apply (default: each workload's "
                      f"own, {_bench_sizes('bench_heads', 'heads')})")
    grid.add_argument("--convention", default="",
                      help="time every implementation in this named convention of its kind "
                           f"(of {_csv(_conventions())}; e.g. gqa-bshd: rotary apply as kernels "
                           "take it); default: each in the first of its kind's it supports")
    grid.add_argument("--max-elements", type=int, default=DEFAULT_MAX_ELEMENTS,
                      help="leave out tables with more elements (length x d_model) than this "
                      "(default %(default)s)")
    timing = parser.add_argument_group("timing and limits")
    timing.add_argument("--max-time", type=float, help="seconds pytest-benchmark spends timing one "
                        f"cell (default {TIMING.max_time:g}; --quick {QUICK_TIMING.max_time:g})")
    timing.add_argument("--min-rounds", type=int, help="rounds per cell at least "
                        f"(default {TIMING.min_rounds}; --quick {QUICK_TIMING.min_rounds})")
    timing.add_argument("--cell-budget-s", type=float,
                        help="skip a cell predicted to take longer, in seconds "
                        f"(default {LIMITS.cell_budget_s:g}; --quick {QUICK_LIMITS.cell_budget_s:g})")
    timing.add_argument("--timeout-s", type=float, help="kill a cell running longer, in seconds "
                        f"(default {LIMITS.timeout_s:g}; --quick {QUICK_LIMITS.timeout_s:g})")
    timing.add_argument("--budget-s", type=float,
                        help="seconds for the whole sweep; cells that will not fit are skipped")
    timing.add_argument("--attempts", type=int, default=MAX_ATTEMPTS,
                        help="measure a cell flagged for load or noise up to this many times, "
                        "later in the run (default %(default)s; 1: never again)")
    run = parser.add_argument_group("run")
    run.add_argument("--resume", nargs="?", const=NEWEST, metavar="RUN_DIR",
                     help="finish an interrupted run (default: the newest under --out) and "
                          "measure again its cells still flagged for load (within --attempts); "
                          "cells it recorded as error or timeout are kept, not retried")
    run.add_argument("--no-post", action="store_true",
                     help="skip verify, conventions, precision and the report afterwards")
    run.add_argument("--dry-run", action="store_true", help="print the planned cells and stop")
    run.add_argument("--verbose", action="store_true",
                     help="a line per cell on the screen (always in the run's logs/bench.log)")


def _conventions() -> tuple[str, ...]:
    """Every kind's named conventions."""
    return tuple(dict.fromkeys(name for kind in kinds.KINDS.values() for name in kind.conventions))


def _bench_sizes(field: str, axis: str) -> str:
    """Each workload's own default for --batch or --heads, as the help says it."""
    return ", ".join(f"{w.name} {getattr(w, field)}" for kind in kinds.KINDS.values()
                     for w in kind.workloads if getattr(w, axis))


def _given_at_least(value: Optional[int], option: str) -> Optional[int]:
    """--batch or --heads: None (each workload's own), else at least 1."""
    return None if value is None else _at_least(value, option, 1)


def _axis_rules(cores: int) -> dict[str, tuple[Callable, Callable, str]]:
    """Grid axis -> (item type, test, what is allowed) for its comma-separated option."""
    return {
        "lengths": (int, lambda n: n >= 1, "integers >= 1"),
        "d_models": (int, lambda d: d >= 2 and d % 2 == 0, "even integers >= 2"),
        "dtypes": (str, lambda t: t in DTYPES, f"names of {_csv(DTYPES)}"),
        "threads": (int, lambda n: 1 <= n <= cores, f"integers from 1 to {cores} (the CPUs this "
                    "process may use: affinity and cgroup quota)"),
        "workloads": (str, lambda w: w in kinds.all_workloads(),
                      f"names of {_csv(kinds.all_workloads())}"),
        "device_dtypes": (str, lambda t: t in DTYPES, f"names of {_csv(DTYPES)}"),
        "modes": (str, lambda m: m in MODES, f"names of {_csv(MODES)}"),
    }


def parse(args: argparse.Namespace) -> SweepOptions:
    """Validate everything before anything runs; unset options take the (quick) defaults."""
    cores = cpus.usable()
    if args.full and args.quick:
        raise UsageError("--full and --quick exclude each other: --full times every size, "
                         "--quick a small grid")
    base = default_grid(cores, quick=args.quick, full=args.full)
    timing0, limits0 = (QUICK_TIMING, QUICK_LIMITS) if args.quick else (TIMING, LIMITS)

    def given(name: str, default: object):
        value = getattr(args, name)
        return getattr(default, name) if value is None else value

    axes = {name: _list(getattr(args, name), "--" + name.replace("_", "-"), *rule)
            or getattr(base, name) for name, rule in _axis_rules(cores).items()}
    convention = getattr(args, "convention", "") or ""
    if convention and convention not in _conventions():
        raise UsageError(f"--convention must be one of {_csv(_conventions())}, got {convention!r}")
    grid = Grid(**axes, batch=_given_at_least(args.batch, "--batch"), convention=convention,
                heads=_given_at_least(args.heads, "--heads"), quick=args.quick, full=args.full,
                scaling_at_largest=base.scaling_at_largest and not args.threads,
                max_elements=_at_least(args.max_elements, "--max-elements", 1))
    timing = Timing(max_time=_positive(given("max_time", timing0), "--max-time"),
                    min_rounds=_at_least(given("min_rounds", timing0), "--min-rounds", 1))
    budget_s = None if args.budget_s is None else _positive(args.budget_s, "--budget-s")
    limits = Limits(cell_budget_s=_positive(given("cell_budget_s", limits0), "--cell-budget-s"),
                    timeout_s=_positive(given("timeout_s", limits0), "--timeout-s"),
                    budget_s=budget_s, prune=not args.full)
    out = Path(args.out)
    return SweepOptions(grid, timing, limits, out, _resume_dir(args.resume, out),
                        tuple(args.plugin), tuple(args.only), args.quick, not args.no_post,
                        args.dry_run, _at_least(args.attempts, "--attempts", 1), args.verbose)


def _csv(values: tuple) -> str:
    return ",".join(map(str, values))


def _list(text: Optional[str], option: str, kind: Callable, ok: Callable, allowed: str) -> tuple:
    """'64,256' -> (64, 256); empty when the option was not given."""
    if text is None:
        return ()
    values = []
    for item in text.split(","):
        try:
            value = kind(item.strip())
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise UsageError(f"{option} takes a comma-separated list of {allowed}; "
                             f"got {item.strip()!r}")
        values.append(value)
    return tuple(dict.fromkeys(values))


def _resume_dir(value: Optional[str], out: Path) -> Optional[Path]:
    """The run directory to finish: given, or the newest under --out with a journal."""
    if value is None:
        return None
    if value == NEWEST:
        runs = sorted(p.parent for p in out.glob(f"*/{journal.FILENAME}"))
        if not runs:
            raise UsageError(f"--resume: no run directory with {journal.FILENAME} under {out}")
        return runs[-1]
    path = Path(value)
    if not (path / journal.FILENAME).is_file():
        raise UsageError(f"--resume: {path} is not a bench run directory (no {journal.FILENAME})")
    return path
