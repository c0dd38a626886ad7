"""Run a sweep: plan the cells, group them by (backend, threads), run each group, keep results on disk.

Groups run one after another, all-core groups first, so a thread pool never
competes with another and a 1-thread cell far behind at all cores is left out
(harness.bench.prune). Every row lands in the journal at once; bench.csv is rewritten from
it after each group and on the way out (Ctrl-C included), never while a worker
times a cell: the parent only polls small files then, and prints a line per row.
The last lines name the cells that are `invalid` and those flagged for load
(harness.bench.contention), which the report leaves out of its verdicts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import pandas as pd

from harness import backends
from harness.bench import env, validity
from harness.bench.budget import BUDGET_PREFIX
from harness.bench.cells import Cell, Outcome, row
from harness.bench.grid import Plan, plan
from harness.bench.options import SweepOptions
from harness.bench.console import Console
from harness.bench.remeasure import MIN_BATCH, Retries, interleave
from harness.bench.supervisor import Group, Supervisor
from harness.core.registry import Implementation
from harness.runs import flags as flag_rules
from harness.runs import journal, results
from harness.util.runlock import RunLock, create_unique



@dataclass(frozen=True)
class RunDir:
    """A run directory, what it is called in every row, and this process's lock on it."""

    path: Path
    run_id: str
    machine: str
    lock: Optional[RunLock] = field(default=None, compare=False)
    #: The journal's rows, read as it grows (bench.csv is rebuilt from them after every group)
    rows: journal.JournalRows = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", journal.JournalRows(self.path / journal.FILENAME))


def groups(cells: Iterable[Cell], cold_starts: bool = False) -> list[Group]:
    """One worker per (backend, threads), its cells smallest size first, every implementation
    of a size before the next (harness.bench.prune reads the smaller ones); the groups at the
    most threads first (prune reads them for the 1-thread cells). A backend whose pools resize
    while it runs (`runtime_threads`: Numba) serves every thread count from one worker, its
    cells at the most threads first. With `cold_starts`, a backend
    that compiles on first use (its adapter's `jit`) gets one per implementation x dtype, so
    that its first call is cold; without, its implementations share a worker (a compile once
    per kernel, not once per implementation: the first calls after the worker's first are
    labelled `shared`, never `cold`)."""
    buckets: dict[tuple, list[Cell]] = {}
    for cell in cells:
        buckets.setdefault(_worker(cell, cold_starts), []).append(cell)
    out = []
    for members in buckets.values():
        members.sort(key=lambda c: (-c.threads, c.workload, c.device, c.length * c.d_model,
                                    c.length, c.impl, c.dtype))
        backend = members[0].backend
        out.append(Group(backend, max(c.threads for c in members), tuple(members),
                         shared_jit=backends.get(backend).jit and not cold_starts,
                         counts=tuple(sorted({c.threads for c in members}))))
    return sorted(out, key=lambda g: (-g.cells[0].threads, g.backend, g.cells[0].impl,
                                      g.cells[0].dtype))


def _worker(cell: Cell, cold_starts: bool) -> tuple:
    """Cells with the same value share a worker process."""
    adapter = backends.get(cell.backend)
    alone = (cell.impl, cell.dtype) if cold_starts and adapter.jit else ()
    threads = () if adapter.runtime_threads else (cell.threads,)
    return (cell.backend, *threads, *alone)


def fold(cells: list[Cell], fallbacks: Mapping[str, Cell], later: list[Group], full: bool,
         console: Console) -> list[Cell]:
    """`cells` less the fallbacks (cells at fewer threads, harness.bench.remeasure) that a group
    in `later` of the same worker can time: each joins that group (`later` is changed in
    place), where it waits its turn behind other work as a batch would, without a batch's
    fresh worker (3-8 s of imports: in the quiet default sweep of 20261128-101932 the 13
    fallbacks' batches took 25 s, their one-thread groups still to come)."""
    keep = []
    for cell in cells:
        at = next((i for i, g in enumerate(later)
                   if _worker(g.cells[0], full) == _worker(cell, full)), None)
        if cell.key not in fallbacks or at is None:
            keep.append(cell)
            continue
        later[at] = groups([*later[at].cells, cell], full)[0]
        console.more_cells(1, [cell])
    return keep


def open_run(opts: SweepOptions, argv: Sequence[str], cores: int) -> RunDir:
    """A new run directory with its env.json, or the one --resume names; locked either way
    (harness.util.runlock: a resume while the run still lives is refused)."""
    path = opts.resume if opts.resume is not None else create_unique(opts.out, env.run_id())
    lock = RunLock(path, argv)
    try:
        if opts.resume is not None:
            recorded = env.read(path)
            return RunDir(path, recorded["run_id"], recorded["machine"], lock)
        environment = env.collect(path.name, argv, cores)   # two runs in one second: name-2
        env.write(path, environment)
        return RunDir(path, path.name, environment["machine"], lock)
    except BaseException:
        lock.release()
        raise


def write_csv(run: RunDir) -> None:
    """Rebuild bench.csv from the journal: between groups and on the way out, never while a
    worker times a cell (pandas in the parent would take a core from the cell it times).

    The journal, not the rows this process has seen, is the source: a worker killed
    by Ctrl-C may have written a row the parent had not read yet.
    """
    results.write(run.path, run.rows.all(), run.run_id, run.machine)


def cut_by_sweep_budget(row: dict[str, Any]) -> bool:
    """A cell --budget-s skipped never ran: --resume runs it (and keeps its new row)."""
    return row.get("status") == "skip" and str(row.get("reason", "")).startswith(BUDGET_PREFIX)


def run(opts: SweepOptions, impls: Sequence[Implementation], run_dir: RunDir,
        console: Optional[Console] = None) -> list[dict[str, Any]]:
    """Time every planned cell not already in the run's journal, then measure flagged cells
    again within a bound (harness.bench.remeasure); returns every row of the run. What it
    says goes to `console` (default: a new one, logging to logs/bench.log)."""
    own = console is None
    if console is None:
        console = Console(0, {}, log=log_path(run_dir.path))
    try:
        return _sweep(opts, impls, run_dir, console)
    finally:
        if own:
            console.close()


def log_path(run_dir: Path) -> Path:
    """The run's own log: every line bench said, and one per cell."""
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    return run_dir / "logs" / "bench.log"


def _sweep(opts: SweepOptions, impls: Sequence[Implementation], run_dir: RunDir,
           console: Console) -> list[dict[str, Any]]:
    cells = plan(impls, opts.grid)
    path = run_dir.path / journal.FILENAME
    earlier = run_dir.rows.all()
    done = {r["key"] for r in earlier if not cut_by_sweep_budget(r)}
    for cell, reason in cells.unsupported:
        if cell.key not in done:
            journal.append(path, row(cell, Outcome("skip", reason)))
    todo = groups((c for c in cells.cells if c.key not in done), opts.grid.full)
    console.say(f"bench: run {run_dir.run_id} in {run_dir.path}"
                + (f" (resumed: {len(done)} cells already done)" if done else ""))
    planned = describe(cells, todo)
    console.say(planned[0].split(": ")[0].strip())
    for line in planned:
        console.say(line, screen=False)
    console.more_cells(sum(len(g.cells) for g in todo), [c for g in todo for c in g.cells])
    by_key = {c.key: c for c in cells.cells}
    retries = Retries(len(cells.cells), opts.attempts, contenders_only=opts.limits.prune,
                      planned=frozenset(by_key) | done, min_batch=MIN_BATCH)
    number = [0]                        # the group now running (retries wait for a later one)
    for old in earlier:                 # --resume: a cell still flagged is measured again
        retries.seen(old, by_key.get(old["key"]), -1)

    def on_row(new: dict[str, Any]) -> None:
        console.cell(new)
        retries.seen(new, by_key.get(new["key"]) or retries.cell(new["key"]), number[0])

    limits = opts.limits
    if limits.budget_s is not None:
        limits = replace(limits, deadline=time.time() + limits.budget_s)
    supervisor = Supervisor(run_dir.path, opts.plugins, opts.timing, limits, on_row,
                            keep_fds=run_dir.lock.fds if run_dir.lock else ())

    def again(cells_now: list[Cell], later: list[Group]) -> None:
        """Measure `cells_now` again, one worker per (backend, threads), counted as retries; a
        fallback whose worker a group in `later` starts anyway joins that group instead
        (`fold`)."""
        cells_now = fold(cells_now, retries.extra, later, opts.grid.full, console)
        if not cells_now:
            return
        console.more_cells(len(cells_now), cells_now)
        fewer = sum(c.key in retries.extra for c in cells_now)
        console.say(f"bench: measuring {len(cells_now)} cell(s) again, flagged for load or noise"
                    + (f" ({fewer} at fewer threads: the load left fewer cores free)"
                       if fewer else ""), screen=console.verbose)
        start = time.monotonic()
        for group in groups(cells_now, opts.grid.full):
            if limits.deadline is not None and time.time() >= limits.deadline:
                break
            supervisor.run(replace(group, cells=tuple(interleave(group.cells))))
            write_csv(run_dir)
        retries.timed(time.monotonic() - start, len(cells_now))

    try:
        queue = list(todo)
        while queue:
            group = queue.pop(0)
            if limits.deadline is not None and time.time() >= limits.deadline:
                used_up = f"{BUDGET_PREFIX} --budget-s {limits.budget_s:g} used up"
                supervisor.settle(group.cells, Outcome("skip", used_up))
            else:
                supervisor.run(group)
            write_csv(run_dir)
            number[0] += 1
            again(retries.due(number[0]), queue)
        while retries.pending:
            number[0] += 1
            again(retries.due(number[0], final=True), [])
        supervisor.close()
    finally:
        write_csv(run_dir)
    rows = run_dir.rows.all()
    frame = results.tidy(rows, run_dir.run_id, run_dir.machine)
    if len(frame):
        console.say(flag_rules.summary(frame), screen=console.verbose)
    for line in closing(frame, run_dir.path):
        console.say(line)
    return rows


def closing(frame: pd.DataFrame, run_dir: Optional[Path] = None) -> list[str]:
    """What the end of a sweep says about its cells: invalid ones, and those still flagged for
    load after being measured again, with the one thing to do about them."""
    lines = []
    invalid = frame[frame["status"] == "invalid"] if len(frame) else frame
    if len(invalid):
        reasons = invalid["reason"].astype(str)
        lookups = int(reasons.str.contains(validity.LOOKUP, regex=False).sum())
        lines.append(f"bench: {len(invalid)} cell(s) invalid, not timed and never recommended "
                     f"({lookups} lookup(s) keeping a table after setup, {len(invalid) - lookups} "
                     "with a result that is not a fresh, finite table of the right shape, dtype "
                     "and values): see `reason` in bench.csv")
    marked, timed = flag_rules.flagged_count(frame)
    if marked:
        fewer = flag_rules.answered_at_fewer(frame)
        lines += [f"bench: {marked} of {timed} timed cells stayed flagged, left out of the answers:",
                  f"  {flag_rules.why_flagged(frame)}" + (f"; {fewer}" if fewer else "") + ";",
                  "  " + flag_rules.what_to_do(str(run_dir) if run_dir is not None else "RUN_DIR")]
    return lines


def describe(cells: Plan, todo: list[Group]) -> list[str]:
    """What a sweep is about to do, for the terminal (and --dry-run)."""
    plural = "s" if len(todo) != 1 else ""
    lines = [f"  {sum(len(g.cells) for g in todo)} cells to time in {len(todo)} worker group{plural}: "
             + ", ".join(f"{g.name} {len(g.cells)}" for g in todo)]
    if cells.unsupported:
        lines.append(f"  {len(cells.unsupported)} cells not supported by their implementation "
                     "(recorded as 'skip')")
    lines += [f"  not available here: {name} ({why})" for name, why in cells.unavailable.items()]
    return lines
