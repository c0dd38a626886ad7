"""`python -m harness verify`: every available implementation against the reference.

Runs the case matrix (harness.cases) through `checks.check`, writes
`verify.csv` and `verify.md` under --out after every implementation (an
interrupted run keeps what it finished), prints a summary and exits 1 when
anything fails or errors.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from harness import io, tables
from harness.cases import default_cases
from harness.checks import STATUSES, Check, check
from harness.registry import Implementation
from harness.spec import Spec

LONG_POSITIONS = 100_000


def select(impls: Iterable[Implementation], only: Sequence[str] = ()) -> list[Implementation]:
    """Implementations whose name matches any of the `only` globs (all when empty)."""
    impls = list(impls)
    return [i for i in impls if not only or any(fnmatch.fnmatch(i.name, g) for g in only)]


def run(impls: Sequence[Implementation], specs: Sequence[Spec], timeout_s: float = 120.0,
        on_impl_done: Callable[[Implementation, list[Check]], None] | None = None) -> list[Check]:
    """Check every implementation on every spec; a hanging one is abandoned after its timeout."""
    checks: list[Check] = []
    for impl in impls:
        mine: list[Check] = []
        hung = False
        for spec in specs:
            if hung:  # its abandoned call may still be running: do not pile up more
                mine.append(Check(impl.name, impl.backend, impl.device, impl.workload, spec,
                                  "error", "not run: an earlier case timed out"))
                continue
            mine.append(check(impl, spec, timeout_s))
            hung = mine[-1].reason.startswith("timeout")
        checks.extend(mine)
        if on_impl_done:
            on_impl_done(impl, mine)
    return checks


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
        f32_long = [c.max_abs_err for c in ran if c.spec.dtype == "float32"
                    and c.spec.max_position >= LONG_POSITIONS]
        problems = [c for c in mine if c.status in ("fail", "error")]
        rows.append({
            "impl": name, "backend": mine[0].backend, "device": mine[0].device,
            **{s: sum(c.status == s for c in mine) for s in STATUSES},
            "worst_err": max((c.max_abs_err for c in ran), default=float("nan")),
            "worst_ratio": worst.err_ratio if worst else float("nan"),
            "f32_err_long": max(f32_long, default=float("nan")),
            "first_problem": _first_problem(mine, problems),
        })
    return rows


def _first_problem(mine: list[Check], problems: list[Check]) -> str:
    """The first fail/error, or a warning that nothing was checked (no case supported)."""
    if problems:
        return f"{problems[0].spec.short()}: {problems[0].reason}"[:110]
    if not any(c.status == "pass" for c in mine):
        return f"no case run ({mine[0].reason})"[:110] if mine else "no case run"
    return ""


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
            f"tables reaching {LONG_POSITIONS:,} positions. Tolerance: harness/tolerance.py.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="seconds one build or call may take before it is recorded as an error")
    parser.add_argument("--random", type=int, default=8, help="number of seeded random specs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random specs")


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    chosen = select(impls, args.only)
    if not chosen:
        print(f"verify: no implementation matches --only {args.only}", file=sys.stderr)
        return 2
    specs = default_cases(quick=args.quick, n_random=args.random, seed=args.seed)
    out = Path(args.out)
    done: list[Check] = []
    started = time.perf_counter()

    def progress(impl: Implementation, mine: list[Check]) -> None:
        done.extend(mine)
        write_outputs(done, out)
        counts = {s: sum(c.status == s for c in mine) for s in STATUSES}
        print(f"[{len({c.impl for c in done})}/{len(chosen)}] {impl.name:<24} "
              + " ".join(f"{k} {v}" for k, v in counts.items())
              + f"  ({time.perf_counter() - started:.0f} s)", flush=True)

    checks = run(chosen, specs, args.timeout_s, progress)
    print()
    rows = summary(checks)
    print(tables.text(SUMMARY_HEADERS, [[r[h] for h in SUMMARY_HEADERS] for r in rows]))
    print(f"\n{len(checks)} checks over {len(specs)} specs; wrote {out / 'verify.csv'} "
          f"and {out / 'verify.md'}")
    bad = [r["impl"] for r in rows if r["fail"] or r["error"]]
    if bad:
        print(f"FAILED: {', '.join(bad)}")
        return 1
    print("all implementations pass")
    return 0
