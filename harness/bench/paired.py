"""`python -m harness roofs RUN_DIR`: each workload's best against its roof, in alternating rounds.

Bench's last timing step (after verify, before the report: harness.bench.post).

The sweep's roof ratios divide medians timed in different processes, often minutes apart, on a
machine whose memory bandwidth moves meanwhile. This step takes, at the largest size of every
workload and dtype on the CPU with the most threads the run timed (in its kind's first
convention, the one the report recommends in), the fastest implementation that passes verify
(and a runner-up within RUNNER_UP of it, which the sweep's noise may have ranked second) and
the two fastest roofs of the bound that binds there (harness.runs.results), and times them
together in one worker process, a round each in turn (harness.bench.pairing); first calls the
same way, against allocate-and-fill roofs, every side's output in new memory
(harness.util.heap). Each ratio is the median over rounds of the
implementation's time over the fastest roof's in the same round. `paired.csv`
(harness.runs.paired) holds one row per implementation and measure, rewritten after each
output (an interrupted run keeps what it finished); the report's roof table reads it.

An output timed while other processes held the cores its threads needed is flagged `load`
(harness.runs.flags, from load columns sampled around its rounds): a parallel kernel then waits
at every barrier for a thread that is not running (on the 2-core VM under a load of 5 a 0.4 ms
call took 16 ms, its roof's too). The worker's clock is held against this process's (the
sweep's rule, harness.bench.supervisor); a worker silent for OUTPUT_TIMEOUT_S is killed, its
output recorded as a timeout and the rest go on in a new one; outputs not begun within
BUDGET_S are skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

from harness.bench import pairing
from harness.bench.cells import Cell
from harness.bench.contention import COLUMNS
from harness.bench.supervisor import CLOCK_MIN_S, CLOCK_SLACK
from harness.bench.threads import thread_env
from harness.core import kinds
from harness.core.isolate import describe_exit
from harness.runs import flags as flag_rules
from harness.runs import results
from harness.runs.paired import FILENAME, MEASURES
from harness.runs.results import ROOF_KEYS, roof_bound
from harness.runs.verdicts import verdict
from harness.util import exitcodes, heap, io, lifeline
from harness.util.exitcodes import UsageError

#: The runner-up is timed too when the sweep had it within this factor of the fastest.
RUNNER_UP = 1.5
#: Rounds per output at least (each contender one round per round), and timed seconds at least;
#: rounds of first calls (each a fresh build, untimed but not free: two rotations of four
#: contenders; four rounds' median, of first calls spread 2-5x by the load, moved by 2x
#: between two runs of the step).
ROUNDS, MIN_S, FIRST_ROUNDS = 8, 0.2, 8
#: The outputs not begun after this many seconds of the step are skipped (a loaded machine
#: makes every two-thread round ten times slower, and those are flagged anyway). The default
#: sweep's 20 outputs took 81-82 s at load 2-3 (first calls in 4 rounds or 8), 120 s with the
#: last six left out at load 4.
BUDGET_S = 180.0
OUTPUT_TIMEOUT_S = 120.0
#: The implementation's flags that bar it: its timings or its values could not be trusted.
BARRED = ("clock", "implausible", "inputs")
CELL_FIELDS = tuple(f for f in Cell.__dataclass_fields__)
OUTPUT_FIELDS = ("workload", "kind", "dtype", "length", "d_model", "batch", "heads", "convention")

#: The cli gives this verb no implementations: the worker loads them, never this process.
NEEDS_IMPLEMENTATIONS = False


#: Names of what builds nothing into fresh memory: in-place kernels (rotating their inputs) and
#: roofs writing into memory an earlier call let go; neither is a one-off build's yardstick.
IN_PLACE, RECYCLED = "inplace", "recycled"


@dataclass(frozen=True)
class Output:
    """One output to time: its id, the implementations and the roofs (bench.csv rows), and
    for first calls (a fresh build each round) the implementations with the fastest first
    calls and the allocate-and-fill roofs."""

    id: str
    picks: tuple[dict[str, Any], ...]
    roofs: tuple[dict[str, Any], ...]
    first_picks: tuple[dict[str, Any], ...] = ()
    first_roofs: tuple[dict[str, Any], ...] = ()

    @property
    def cells(self) -> list[dict[str, Any]]:
        return _cells((*self.picks, *self.roofs))

    @property
    def first_cells(self) -> list[dict[str, Any]]:
        return _cells((*self.first_picks, *self.first_roofs)) if self.first_roofs else []


def _cells(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _plain(r[k]) for k in CELL_FIELDS if k in r} for r in rows]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def outputs(bench: pd.DataFrame, verify: Optional[pd.DataFrame]) -> list[Output]:
    """Per (workload, dtype) on the CPU at its largest size and most threads: the fastest
    implementation that passes verify (a runner-up within RUNNER_UP, and its fresh or recycled
    sibling) and the two fastest roofs of the binding bound, as the sweep timed them."""
    first = bench["kind"].map(lambda kind: next(iter(kinds.named(kind).conventions)))
    cpu = bench[(bench["device"] == "cpu") & (bench["status"] == "ok")
                & (bench["mode"].fillna("") == "") & (bench["convention"] == first)]
    found = []
    for (work, dtype), group in cpu[~cpu["is_roof"]].groupby(["workload", "dtype"], sort=True):
        largest = group[group["bytes_out"] == group["bytes_out"].max()]
        most = largest[largest["threads"] == largest["threads"].max()]
        fine = most[~most["flags"].fillna("").astype(str).str.contains("|".join(BARRED))]
        picks = [r for _, r in fine.sort_values("median_s").iterrows()
                 if verdict(verify, r["impl"], r["dtype"]) is None][:2]
        if not picks:
            continue
        if picks[-1]["median_s"] > RUNNER_UP * picks[0]["median_s"]:
            picks = picks[:1]
        picks += [r for _, r in fine.iterrows() if r["impl"] == _sibling(picks[0]["impl"])
                  and r["impl"] not in {p["impl"] for p in picks}
                  and verdict(verify, r["impl"], r["dtype"]) is None][:1]
        roofs = _roofs(cpu, picks[0])
        if roofs:
            found.append(Output(f"{work}/{dtype}", tuple(dict(p) for p in picks), tuple(roofs),
                                *_first_calls(cpu, fine, picks[0], verify)))
    return found


def _sibling(impl: str) -> str:
    """The same kernel's other output memory: `X-recycled` for X and X for `X-recycled`. Paired
    beside the pick whatever the sweep said: it timed the float32 rotary cache's recycled
    variant 1.82x behind its fresh one, in another bandwidth regime; paired, the recycled one is
    at its roof (0.89-0.93x) and the fresh one 2-8x (a new mapping faulted in every call)."""
    suffix = "-" + RECYCLED
    return impl[: -len(suffix)] if impl.endswith(suffix) else impl + suffix


def _first_calls(cpu: pd.DataFrame, rows: pd.DataFrame, pick: pd.Series,
                 verify: Optional[pd.DataFrame]) -> tuple[tuple[dict[str, Any], ...], ...]:
    """(the two fastest first calls that pass verify and build into fresh memory, the two
    fastest first calls of allocate-and-fill roofs of the same output), as the sweep timed
    them once each."""
    rows = rows[rows["first_call_s"].notna() & ~rows["impl"].str.contains(IN_PLACE)]
    picks = tuple(dict(r) for _, r in rows.sort_values("first_call_s").iterrows()
                  if verdict(verify, r["impl"], r["dtype"]) is None)[:2]
    roofs = _roofs_of(cpu, pick)
    roofs = roofs[roofs["first_call_s"].notna() & ~roofs["impl"].str.contains(RECYCLED)
                  & (roofs["impl"].map(roof_bound) == "memory")]
    fills = tuple(dict(r) for _, r in roofs.sort_values("first_call_s").head(2).iterrows())
    return (picks, fills) if picks and fills else ((), ())


def _roofs_of(cpu: pd.DataFrame, pick: pd.Series) -> pd.DataFrame:
    """The roofs timed for `pick`'s output (ROOF_KEYS, NaN matching NaN) at its thread count."""
    roofs = cpu[cpu["is_roof"] & (cpu["threads"] == pick["threads"])]
    for key in ROOF_KEYS:
        roofs = roofs[(roofs[key] == pick[key]) | (roofs[key].isna() & pd.isna(pick[key]))]
    return roofs


def _roofs(cpu: pd.DataFrame, pick: pd.Series) -> list[dict[str, Any]]:
    """The two fastest roofs of `pick`'s output and thread count, of its binding bound: the
    one bench.csv names, or where the sweep flagged every roof of the output for load (no
    yardstick there, so no `roof_bound`), the bound whose fastest roof is the slowest."""
    roofs = _roofs_of(cpu, pick)
    bounds = roofs["impl"].map(roof_bound)
    binding = pick.get("roof_bound")
    if not isinstance(binding, str) and len(roofs):
        binding = roofs.groupby(bounds)["median_s"].min().idxmax()
    roofs = roofs[bounds == binding]
    return [dict(r) for _, r in roofs.sort_values("median_s").head(2).iterrows()]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a bench run directory")


def main(args: argparse.Namespace, impls: Sequence[Any]) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / results.FILENAME).is_file():
        raise UsageError(f"RUN_DIR {run_dir} has no {results.FILENAME}: not a finished bench run")
    verify = run_dir / "verify.csv"
    todo = outputs(pd.read_csv(run_dir / results.FILENAME, keep_default_na=False,
                               na_values=[""]),
                   pd.read_csv(verify) if verify.is_file() else None)
    if not todo:
        print("roofs: nothing to time (no implementation timed ok and passing verify on the CPU)")
        return exitcodes.OK
    threads = int(max(int(o.picks[0]["threads"]) for o in todo))
    rows = time_outputs(todo, threads, args.plugin, run_dir / FILENAME)
    for row in rows:
        print(describe(row))
    return exitcodes.OK


def time_outputs(todo: Sequence[Output], threads: int, plugins: Sequence[str],
                 csv: Path) -> list[dict[str, Any]]:
    """Time every output in worker processes (a new one after a worker stopped short);
    paired.csv rewritten as each output is judged."""
    rows: list[dict[str, Any]] = []

    def judged(output: Output, line: dict[str, Any], wall_s: float) -> None:
        rows.extend(judge(output, line, wall_s, threads))
        io.write_text(csv, pd.DataFrame(rows).to_csv(index=False))

    pending, start = list(todo), time.monotonic()
    while pending:
        left = max(0.0, BUDGET_S - (time.monotonic() - start))
        done, stopped = _worker(pending, threads, plugins, judged, left)
        if done < len(pending):             # the one it was on: it hung or died there
            judged(pending[done], {"status": "error" if stopped else "timeout",
                                   "reason": stopped or f"no answer in {OUTPUT_TIMEOUT_S:g} s"},
                   float("nan"))
        pending = pending[done + 1:]
    return rows


def _worker(pending: Sequence[Output], threads: int, plugins: Sequence[str],
            judged: Callable[[Output, dict[str, Any], float], None],
            budget_s: float = BUDGET_S) -> tuple[int, str]:
    """Run one worker over `pending` until it ends or falls silent, `judged(output, line,
    seconds this process saw since the worker's previous line)` as each line comes: (how many
    it answered, "" or how it died; a worker killed for silence says "")."""
    with tempfile.TemporaryDirectory(prefix="pe-roofs-") as tmp:
        results_path = Path(tmp) / "results.jsonl"
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({"threads": threads, "plugins": list(plugins),
                                      "rounds": ROUNDS, "min_s": MIN_S,
                                      "first_rounds": FIRST_ROUNDS, "budget_s": budget_s,
                                      "results": str(results_path),
                                      "outputs": [{"id": o.id, "cells": o.cells,
                                                   "first": o.first_cells} for o in pending]}))
        done = 0
        with lifeline.Lifeline() as line:
            try:
                proc = subprocess.Popen([sys.executable, "-m", "harness.bench.pairing", str(config)],
                                        env={**os.environ, **thread_env(threads), **heap.steady_env(),
                                             **line.env},
                                        pass_fds=line.fds, stdout=sys.stderr,
                                        start_new_session=True)
            finally:
                line.started()
            started, last, killed = time.monotonic(), None, False
            while True:
                code = proc.poll()
                lines = _read(results_path)
                if lines and last is None:      # its first line: implementations loaded
                    last = time.monotonic()
                for new in lines[done + 1:]:
                    now = time.monotonic()
                    judged(pending[done], new, now - last)
                    done, last = done + 1, now
                if code is not None or done == len(pending):
                    break
                if time.monotonic() - (started if last is None else last) > OUTPUT_TIMEOUT_S:
                    proc.kill()
                    killed = True
                    break
                time.sleep(0.05)
            code = proc.wait()
    stopped = ("" if killed or done == len(pending)
               else f"the worker ended before answering ({describe_exit(code)})")
    return done, stopped


def _read(path: Path) -> list[dict[str, Any]]:
    """The worker's lines so far (a line still being written is left for the next read)."""
    try:
        text = path.read_text()
    except OSError:
        return []
    return [json.loads(s) for s in text.splitlines() if s.endswith("}")]


def judge(output: Output, line: dict[str, Any], wall_s: float, threads: int
          ) -> list[dict[str, Any]]:
    """One row per implementation of `output`: its paired ratio, or why there is none."""
    status, reason = line.get("status", "error"), line.get("reason", "")
    own_s = float(line.get("own_s", float("nan")))
    if status == "ok" and wall_s > CLOCK_MIN_S and own_s < wall_s / CLOCK_SLACK:
        status, reason = "clock", (f"its clock counted {own_s:.3g} s of a span that took "
                                   f"{wall_s:.3g} s by this process's clock")
    common = {"threads": threads, "status": status, "reason": reason, "worker_s": own_s,
              **{k: line.get(k, float("nan")) for k in COLUMNS}}
    first_fill = min((float(r["first_call_s"]) for r in output.first_roofs), default=math.nan)
    return ([_row(MEASURES[0], p, output.roofs, common,
                  line.get("rounds_s", {}) if status == "ok" else {}, p.get("roof_ratio"))
             for p in output.picks]
            + [_row(MEASURES[1], p, output.first_roofs, common,
                    line.get("first_s", {}) if status == "ok" else {},
                    float(p["first_call_s"]) / first_fill)
               for p in output.first_picks])


def _row(measure: str, pick: dict[str, Any], roof_rows: Sequence[dict[str, Any]],
         common: dict[str, Any], rounds: dict[str, list[float]], sweep_ratio: Any
         ) -> dict[str, Any]:
    """A paired.csv row: `pick` against the fastest of `roof_rows` round by round."""
    roofs = [r["impl"] for r in roof_rows]
    row = {"measure": measure, **{k: _plain(pick[k]) for k in OUTPUT_FIELDS if k in pick},
           "impl": pick["impl"], "roofs": " ".join(roofs), **common,
           "sweep_ratio": _plain(sweep_ratio)}
    row["flags"] = flag_rules.load_flag(row) if rounds else ""
    if rounds:
        each = pairing.ratios(rounds, pick["impl"], roofs)
        fastest_roof = [min(rounds[r][i] for r in roofs) for i in range(len(each))]
        row.update(impl_s=float(np.median(rounds[pick["impl"]])),
                   roof_s=float(np.median(fastest_roof)), ratio=float(np.median(each)),
                   ratio_p25=float(np.percentile(each, 25)),
                   ratio_p75=float(np.percentile(each, 75)), rounds=len(each))
    return row


def describe(row: dict[str, Any]) -> str:
    where = (f"{row['workload']} {row['dtype']} {row['length']}x{row['d_model']}"
             + (f" {row['measure']}" if row["measure"] != MEASURES[0] else ""))
    if row["status"] != "ok":
        return f"roofs: {where} {row['impl']}: {row['status']} ({row['reason']})"
    return (f"roofs: {where} {row['impl']}: {row['ratio']:.2f}x its roof "
            f"(rounds {row['ratio_p25']:.2f}-{row['ratio_p75']:.2f}; sweep {row['sweep_ratio']:.2f}x)"
            + (f"; {row['flags']}" if row["flags"] else ""))
