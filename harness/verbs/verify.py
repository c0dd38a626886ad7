"""`python -m harness verify`: every available implementation against the reference.

Runs the case matrix (harness.core.kinds.table.cases): each implementation, in a child process per
backend, hands back what it returned; this process judges it (`checks.judge`), writes
`verify.csv` and `verify.md` under --out after every implementation (an
interrupted run keeps what it finished), prints a summary and exits 1 when
anything fails or errors (a crash included: each backend's implementations
run in a child process, so a crash is that implementation's error rows), 2 on
a usage error and 3 when the harness itself fails. Every passing case is graded by the contract
it met (harness/core/contract.py): `exact` (a few ulps of the output dtype everywhere) or
`float32` (angles as if formed in float32, error growing with the angle); `--require exact`
fails anything less. Without --out it writes to
results/_standalone/ (ignored by git), never beside a committed run. With
--json, stdout is one JSON object (`report_json`) and progress goes to stderr.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from harness.core import isolate, kinds
from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.core.checks import VERDICTS, Check
from harness.core.contract import GRADES, at_least
from harness.core.judged import run, run_by_kind
from harness.core.registry import Implementation
from harness.core import selection
from harness.core.kinds.fields import DTYPES
from harness.util import arguments, exitcodes, io, jsonout, tables

__all__ = ["run", "main", "configure"]

#: The cli hands this verb the implementations' identities (harness.core.catalog), never their
#: code: the judging here happens in a process no implementation entered.
JUDGE_APART = True


def frame(checks: Sequence[Check], seed: Optional[int] = None) -> pd.DataFrame:
    """One row per check; with `seed`, the seed of the run's random cases in a column."""
    df = pd.DataFrame([c.row() for c in checks])
    if seed is not None:
        df["seed"] = seed
    return df


def overall_grade(mine: Sequence[Check]) -> str:
    """The contract an implementation met on every case it ran: the worst of its grades
    ("" when it ran none)."""
    grades = [c.grade for c in mine if c.grade]
    return max(grades, key=GRADES.index, default="")


def short_of(checks: Sequence[Check], require: str) -> list[str]:
    """The implementations that failed, erred, or passed a case below the `require`d grade."""
    by_impl: dict[str, list[Check]] = {}
    for c in checks:
        by_impl.setdefault(c.impl, []).append(c)
    return [name for name, mine in by_impl.items()
            if any(c.status in ("fail", "error") for c in mine)
            or not at_least(overall_grade(mine) or GRADES[0], require)]


def summary(checks: Sequence[Check], require: str = "float32") -> list[dict]:
    """One row per implementation: counts by status, the grade it met, and the worst error seen."""
    rows = []
    by_impl: dict[str, list[Check]] = {}
    for c in checks:
        by_impl.setdefault(c.impl, []).append(c)
    for name, mine in by_impl.items():
        ran = [c for c in mine if not np.isnan(c.err_ratio)]
        worst = max(ran, key=lambda c: c.err_ratio, default=None)
        f32_long = [c.max_abs_err for c in ran if c.spec.dtype == "float32"   # a grid has none
                    and getattr(c.spec, "max_position", 0) >= LONG_POSITIONS]
        problems = [c for c in mine if c.status in ("fail", "error")
                    or (c.grade and not at_least(c.grade, require))]
        rows.append({
            "impl": name, "backend": mine[0].backend, "device": mine[0].device,
            **{s: sum(c.status == s for c in mine) for s in VERDICTS},
            "grade": overall_grade(mine),
            "float32_only": sum(c.grade == "float32" for c in mine),
            "worst_err": max((c.max_abs_err for c in ran), default=float("nan")),
            "worst_ratio": worst.err_ratio if worst else float("nan"),
            "f32_err_long": max(f32_long, default=float("nan")),
            "first_problem": _first_problem(mine, problems),
        })
    return rows


def _first_problem(mine: list[Check], problems: list[Check]) -> str:
    """The first fail/error, or a warning that nothing was checked (no case supported)."""
    if problems:
        first = problems[0]
        return f"{first.spec.short()}: {first.reason or 'graded ' + first.grade}"
    if not any(c.status == "pass" for c in mine):
        return f"no case run ({mine[0].reason})" if mine else "no case run"
    return ""


def terminal_summary(rows: list[dict]) -> str:
    """The summary table with each first_problem cut to fit a terminal, then every one of them
    whole and wrapped below it (verify.md and verify.csv always hold them whole)."""
    short = [{**r, "first_problem": _shorten(r["first_problem"])} for r in rows]
    text = tables.text(SUMMARY_HEADERS, [[r[h] for h in SUMMARY_HEADERS] for r in short])
    whole = [textwrap.fill(f"{r['impl']}: {r['first_problem']}", TERMINAL_WIDTH,
                           subsequent_indent="    ")
             for r in rows if r["first_problem"] and r["first_problem"] != _shorten(r["first_problem"])]
    return text + ("\n\nfirst problems in full:\n" + "\n".join(whole) if whole else "")


def _shorten(text: str) -> str:
    return text if len(text) <= SHORT_PROBLEM else text[:SHORT_PROBLEM - 14] + "... (in full below)"


#: first_problem as wide as a summary table row leaves room for, and the width of the full text
SHORT_PROBLEM, TERMINAL_WIDTH = 60, 100
SUMMARY_HEADERS = ["impl", "backend", "device", "pass", "fail", "error", "skip", "grade",
                   "float32_only", "worst_err", "worst_ratio", "f32_err_long", "first_problem"]


def write_outputs(checks: Sequence[Check], out: Path, seed: Optional[int] = None,
                  require: str = "float32") -> None:
    rows = summary(checks, require)
    io.write_csv(out / "verify.csv", frame(checks, seed))
    body = tables.markdown(SUMMARY_HEADERS, [[r[h] for h in SUMMARY_HEADERS] for r in rows])
    drawn = "" if seed is None else f"Random cases drawn from seed {seed} (`--seed {seed}` draws them again).\n\n"
    io.write_text(out / "verify.md", "# verify\n\n" + _legend() + "\n\n" + drawn + body + "\n")


def _legend() -> str:
    return ("grade: the contract met on every case run (exact: a few ulps of the output dtype at "
            "every position; float32: angles as if formed in float32, error growing with the angle; "
            "fail); float32_only: cases passed at the float32 grade only; worst_err: largest "
            "|impl - float64 reference| over all cases; worst_ratio: largest error / per-element "
            "tolerance (> 1 fails); f32_err_long: worst float32 error on tables reaching "
            f"{LONG_POSITIONS:,} positions. The contract: harness/core/contract.py.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="seconds one build or call may take before it is recorded as an error")
    parser.add_argument("--random", type=int, default=8,
                        help="number of seeded random specs, >= 0 (default %(default)s)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the random specs (default: a fresh one each run, printed "
                             "and recorded in verify.csv/md/json, so that a case list cannot be "
                             "learned; give it to draw the same cases again)")
    parser.add_argument("--require", choices=GRADES[:2], default="float32",
                        help="the grade every passing case must meet: float32 (the default: angles "
                             "as if formed in float32) or exact (a few ulps of the output dtype at "
                             "every position); anything less fails")
    parser.add_argument("--dtypes", metavar="T,..", default="",
                        help=f"check only the cases of these output dtypes, of {','.join(DTYPES)} "
                             "(default: every dtype; bench's post-step checks the dtypes it timed)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (per-implementation counts and every failing "
                             "check) on stdout instead of the table; progress goes to stderr")
    isolate.add_option(parser)


def report_json(checks: Sequence[Check], n_specs: int, out: Path,
                seed: Optional[int] = None, require: str = "float32") -> dict:
    """What `verify --json` prints: the verdict, each implementation's counts and grade, every
    fail/error and every case below the required grade."""
    rows = summary(checks, require)
    failed = short_of(checks, require)
    return {"ok": not failed, "failed": failed, "require": require, "specs": n_specs,
            "checks": len(checks), "seed": seed,
            "csv": str(out / "verify.csv"), "markdown": str(out / "verify.md"),
            "implementations": rows,
            "problems": [c.row() for c in checks if c.status in ("fail", "error")
                         or (c.grade and not at_least(c.grade, require))]}


def draw_seed() -> int:
    """A fresh seed for the random cases: an implementation cannot learn what it will be asked."""
    return secrets.randbelow(2**31)


def stall_s(timeout_s: float) -> float:
    """How long the parent waits for one case: a build and three calls, each with its timeout."""
    return 4 * timeout_s + 60.0


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    timeout_s = arguments.positive_seconds(args.timeout_s, "--timeout-s")
    n_random = arguments.at_least(args.random, "--random", 0)
    require = getattr(args, "require", "float32")
    chosen = selection.chosen(impls, args.only)
    by_kind = {k: [i for i in chosen if i.kind == k] for k in dict.fromkeys(i.kind for i in chosen)}
    seed = args.seed if args.seed is not None else draw_seed()
    dtypes = arguments.names(getattr(args, "dtypes", ""), "--dtypes", DTYPES) or DTYPES
    cases = {k: [s for s in kinds.named(k).cases(quick=args.quick, n_random=n_random, seed=seed)
                 if s.dtype in dtypes] for k in by_kind}
    specs = [spec for k in by_kind for spec in cases[k]]
    out = Path(args.out)
    as_json = getattr(args, "json", False)
    log = sys.stderr if as_json else sys.stdout     # with --json, stdout is the JSON alone
    done: list[Check] = []
    started = time.perf_counter()

    def progress(impl: Implementation, mine: list[Check]) -> None:
        done.extend(mine)
        write_outputs(done, out, seed, require)
        counts = {s: sum(c.status == s for c in mine) for s in VERDICTS}
        print(f"[{len({c.impl for c in done})}/{len(chosen)}] {impl.name:<24} "
              + " ".join(f"{k} {v}" for k, v in counts.items())
              + f"  grade {overall_grade(mine) or '-'}"
              + f"  ({time.perf_counter() - started:.0f} s)", file=log, flush=True)

    isolation = isolate.from_args(args, stall_s(timeout_s))
    checks = run_by_kind([i for mine in by_kind.values() for i in mine], cases, timeout_s,
                         progress, isolation)      # each kind's implementations on its cases
    write_outputs(checks, out, seed, require)   # in the order of `list`, not the order groups finished
    rows = summary(checks, require)
    bad = short_of(checks, require)
    if as_json:
        print(jsonout.dumps(report_json(checks, len(specs), out, seed, require)))
        return exitcodes.FINDING if bad else exitcodes.OK
    print()
    print(terminal_summary(rows))
    print(f"\n{len(checks)} checks over {len(specs)} specs (random cases from --seed {seed}); "
          f"wrote {out / 'verify.csv'} "
          f"and {out / 'verify.md'}")
    if bad:
        below = "" if require == "float32" else f" (fail, error, or below the {require} grade)"
        print(f"FAILED{below}: {', '.join(bad)}")
        return exitcodes.FINDING
    print("all implementations pass" + ("" if require == "float32" else f" at the {require} grade"))
    return exitcodes.OK
