"""`python -m harness verify`: every available implementation against the reference.

Runs the case matrix (harness.core.kinds.table.cases) through `checks.check`, writes
`verify.csv` and `verify.md` under --out after every implementation (an
interrupted run keeps what it finished), prints a summary and exits 1 when
anything fails or errors (a crash included: each backend's implementations
run in a child process, so a crash is that implementation's error rows), 2 on
a usage error and 3 when the harness itself fails. Without --out it writes to
results/_standalone/ (ignored by git), never beside a committed run. With
--json, stdout is one JSON object (`report_json`) and progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import pandas as pd

from harness.core import isolate, kinds
from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.core.checks import VERDICTS, Check, check
from harness.core.registry import Implementation
from harness.core.selection import select
from harness.core.kinds.table.spec import Spec
from harness.util import arguments, exitcodes, io, jsonout, tables


def run(impls: Sequence[Implementation], specs: Sequence[Spec], timeout_s: float = 120.0,
        on_impl_done: Callable[[Implementation, list[Check]], None] | None = None,
        isolation: Optional[isolate.Isolation] = None) -> list[Check]:
    """Check every implementation on every spec, in child processes when `isolation` is given
    (a crash costs only that implementation's remaining cases); in this process otherwise."""
    specs = tuple(specs)
    task = isolate.Task("harness.verbs.verify:impl_checks", (specs, timeout_s))
    lost = partial(lost_checks, specs)
    by_impl = isolate.run(impls, task, lost, isolation, on_impl_done)
    return [c for mine in by_impl.values() for c in mine]


def impl_checks(impl: Implementation, specs: Sequence[Spec], timeout_s: float) -> Iterator[Check]:
    """One implementation on every spec; a hanging one is abandoned after its timeout."""
    hung = False
    for spec in specs:
        if hung:  # its abandoned call may still be running: do not pile up more
            yield Check(impl.name, impl.backend, impl.device, impl.workload, spec,
                        "error", "not run: an earlier case timed out")
            continue
        result = check(impl, spec, timeout_s)
        hung = result.reason.startswith("timeout")
        yield result


def lost_checks(specs: Sequence[Spec], impl: Implementation, done: int, why: str) -> list[Check]:
    """The cases a dead (or killed) process did not finish: the one it died on gets `why`; the
    rest are errors too (not run), except those the implementation does not support."""
    def row(spec: Spec, status: str, reason: str) -> Check:
        return Check(impl.name, impl.backend, impl.device, impl.workload, spec, status, reason)

    rows = []
    for i, spec in enumerate(specs[done:]):
        skip = None if i == 0 else _skip_reason(impl, spec)
        reason = why if i == 0 else "not run: its process died on an earlier case"
        rows.append(row(spec, "skip", skip) if skip else row(spec, "error", reason))
    return rows


def _skip_reason(impl: Implementation, spec: Spec) -> Optional[str]:
    try:
        return impl.unavailable_reason() or impl.supports(spec)
    except Exception:     # its own fault: the case counts as not run
        return None


def frame(checks: Sequence[Check]) -> pd.DataFrame:
    return pd.DataFrame([c.row() for c in checks])


def summary(checks: Sequence[Check]) -> list[dict]:
    """One row per implementation: counts by status and the worst error seen."""
    rows = []
    by_impl: dict[str, list[Check]] = {}
    for c in checks:
        by_impl.setdefault(c.impl, []).append(c)
    for name, mine in by_impl.items():
        ran = [c for c in mine if not np.isnan(c.err_ratio)]
        worst = max(ran, key=lambda c: c.err_ratio, default=None)
        f32_long = [c.max_abs_err for c in ran if c.spec.dtype == "float32"   # a grid has none
                    and getattr(c.spec, "max_position", 0) >= LONG_POSITIONS]
        problems = [c for c in mine if c.status in ("fail", "error")]
        rows.append({
            "impl": name, "backend": mine[0].backend, "device": mine[0].device,
            **{s: sum(c.status == s for c in mine) for s in VERDICTS},
            "worst_err": max((c.max_abs_err for c in ran), default=float("nan")),
            "worst_ratio": worst.err_ratio if worst else float("nan"),
            "f32_err_long": max(f32_long, default=float("nan")),
            "first_problem": _first_problem(mine, problems),
        })
    return rows


def _first_problem(mine: list[Check], problems: list[Check]) -> str:
    """The first fail/error, or a warning that nothing was checked (no case supported)."""
    if problems:
        return f"{problems[0].spec.short()}: {problems[0].reason}"
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
SUMMARY_HEADERS = ["impl", "backend", "device", "pass", "fail", "error", "skip",
                   "worst_err", "worst_ratio", "f32_err_long", "first_problem"]


def write_outputs(checks: Sequence[Check], out: Path) -> None:
    rows = summary(checks)
    io.write_csv(out / "verify.csv", frame(checks))
    body = tables.markdown(SUMMARY_HEADERS, [[r[h] for h in SUMMARY_HEADERS] for r in rows])
    io.write_text(out / "verify.md", "# verify\n\n" + _legend() + "\n\n" + body + "\n")


def _legend() -> str:
    return ("worst_err: largest |impl - float64 reference| over all cases; worst_ratio: largest "
            "error / per-element tolerance (> 1 fails); f32_err_long: worst float32 error on "
            f"tables reaching {LONG_POSITIONS:,} positions. Tolerance: harness/core/kinds/table/tolerance.py.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="seconds one build or call may take before it is recorded as an error")
    parser.add_argument("--random", type=int, default=8,
                        help="number of seeded random specs, >= 0 (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random specs")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (per-implementation counts and every failing "
                             "check) on stdout instead of the table; progress goes to stderr")
    isolate.add_option(parser)


def report_json(checks: Sequence[Check], n_specs: int, out: Path) -> dict:
    """What `verify --json` prints: the verdict, each implementation's counts, every fail/error."""
    rows = summary(checks)
    failed = [r["impl"] for r in rows if r["fail"] or r["error"]]
    return {"ok": not failed, "failed": failed, "specs": n_specs, "checks": len(checks),
            "csv": str(out / "verify.csv"), "markdown": str(out / "verify.md"),
            "implementations": rows,
            "problems": [c.row() for c in checks if c.status in ("fail", "error")]}


def stall_s(timeout_s: float) -> float:
    """How long the parent waits for one case: a build and three calls, each with its timeout."""
    return 4 * timeout_s + 60.0


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    timeout_s = arguments.positive_seconds(args.timeout_s, "--timeout-s")
    n_random = arguments.at_least(args.random, "--random", 0)
    chosen = select(impls, args.only)
    if not chosen:
        print(f"verify: no implementation matches --only {args.only}", file=sys.stderr)
        return exitcodes.USAGE
    by_kind = {k: [i for i in chosen if i.kind == k] for k in dict.fromkeys(i.kind for i in chosen)}
    cases = {k: kinds.named(k).cases(quick=args.quick, n_random=n_random, seed=args.seed)
             for k in by_kind}
    specs = [spec for k in by_kind for spec in cases[k]]
    out = Path(args.out)
    as_json = getattr(args, "json", False)
    log = sys.stderr if as_json else sys.stdout     # with --json, stdout is the JSON alone
    done: list[Check] = []
    started = time.perf_counter()

    def progress(impl: Implementation, mine: list[Check]) -> None:
        done.extend(mine)
        write_outputs(done, out)
        counts = {s: sum(c.status == s for c in mine) for s in VERDICTS}
        print(f"[{len({c.impl for c in done})}/{len(chosen)}] {impl.name:<24} "
              + " ".join(f"{k} {v}" for k, v in counts.items())
              + f"  ({time.perf_counter() - started:.0f} s)", file=log, flush=True)

    isolation = isolate.from_args(args, stall_s(timeout_s))
    checks = [c for k, mine in by_kind.items()       # each kind's implementations on its cases
              for c in run(mine, cases[k], timeout_s, progress, isolation)]
    write_outputs(checks, out)          # in the order of `list`, not the order groups finished
    rows = summary(checks)
    bad = [r["impl"] for r in rows if r["fail"] or r["error"]]
    if as_json:
        print(jsonout.dumps(report_json(checks, len(specs), out)))
        return exitcodes.FINDING if bad else exitcodes.OK
    print()
    print(terminal_summary(rows))
    print(f"\n{len(checks)} checks over {len(specs)} specs; wrote {out / 'verify.csv'} "
          f"and {out / 'verify.md'}")
    if bad:
        print(f"FAILED: {', '.join(bad)}")
        return exitcodes.FINDING
    print("all implementations pass")
    return exitcodes.OK
