"""`python -m harness precision`: error vs position, for each dtype and way of computing the table.

Precision is part of correctness: fp16/bf16 angle tables have broken
diffusion and language models, and a float32 table computed directly is off
by ~1e-2 at position 1e5. This study measures it: at log-spaced positions out
to 1e6 (a window of consecutive positions at each), for a narrow table
(d_model 16, base 10000), every method of harness.verbs.precision.methods in every
dtype its backend offers (NumPy: float16, float32; torch: float16, bfloat16,
float32), plus the registered implementations selected by --only (none by
default), each against the float64 reference, in one child process per
backend (harness.core.isolate: a crash costs only its own points). Every other kind with
studies (rotary, timestep, grid: harness/verbs/precision/<kind>.py, runner.py) is studied too
unless --kind picks one: each kind names its studies (`Kind.studies`). Writes precision.csv (a `kind` column), precision.md, plots/precision.png and
plots/precision-<kind>.png under --out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from harness.core import isolate, selection
from harness.core.registry import Implementation
from harness.util import arguments, io, tables
from harness.verbs.precision import table
from harness.verbs.precision.runner import Result, measure, study
from harness.verbs.precision.studies import KINDS as STUDIED

__all__ = ["KIND_CHOICES", "Result", "configure", "main", "measure", "study"]

#: --kind: the 1-D table (table.py, its own study of every method), each kind with studies
#: (`Kind.studies`, gathered in studies.py), or all of them.
KIND_CHOICES = (table.KIND, *STUDIED, "all")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (parser.description or "") + (
        "\n\n--only GLOB adds registered implementations to the study (default: none).")
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="seconds one build or call may take before it is left out")
    parser.add_argument("--kind", choices=KIND_CHOICES, default="all",
                        help="which kind's study to run (default: all)")
    isolate.add_option(parser)


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    kind = getattr(args, "kind", "all")
    out = Path(args.out)
    frames, notes, said = [], [], []
    if kind in (table.KIND, "all"):
        df = _table(args, impls)
        frames.append(df.assign(kind=table.KIND, study=table.KIND))
        notes.append(table.markdown(df))
        headers, rows = table.summary(df)
        said.append(tables.text(headers, rows))
    others = [k for k in STUDIED if kind in (k, "all")]
    if others:
        found = study(others, out, args.quick, getattr(args, "in_process", False))
        frames.append(found.frame)
        notes.append(found.markdown if notes else "# Precision\n\n" + found.markdown)
        said.append("\n".join(["use:", *found.choices]))
    columns = list(dict.fromkeys(["kind", "study", *frames[0].columns]))
    io.write_csv(out / "precision.csv", pd.concat(frames, ignore_index=True)[columns])
    io.write_text(out / "precision.md", "\n".join(notes))
    print("\n\n".join(said))
    print(f"\nwrote {out / 'precision.csv'}, {out / 'precision.md'} and plots under {out / 'plots'}")
    return 0


def _table(args: argparse.Namespace, impls: list[Implementation]) -> pd.DataFrame:
    """The 1-D table study: its methods and any implementations --only names."""
    starts = table.window_starts(args.quick)
    chosen = selection.chosen(impls, args.only) if args.only else []
    timeout_s = arguments.positive_seconds(args.timeout_s, "--timeout-s")
    isolation = isolate.from_args(args, 2 * timeout_s + 60) if chosen else None
    df = table.frame(table.measure_methods(starts) + table.measure_impls(chosen, starts, timeout_s, isolation))
    table.plot(df, Path(args.out) / "plots" / "precision.png")
    return df
