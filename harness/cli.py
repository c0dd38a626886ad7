"""The command line: `python -m harness VERB` (or `pe-harness VERB`).

Every verb shares --plugin, --only, --out and --quick; each verb lives in its
own module with `configure(parser)` and `main(args, impls) -> exit code`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

#: Where every verb writes, and `report` looks for runs, unless --out says otherwise.
DEFAULT_OUT = "results"

VERBS = {
    "list": ("harness.listing", "show implementations, conventions and availability"),
    "verify": ("harness.verify", "check every implementation against the float64 reference"),
    "bench": ("harness.bench.cli", "time implementations over a sweep (pytest-benchmark)"),
    "report": ("harness.report.cli", "rebuild report.md and plots from run directories"),
    "identify": ("harness.identify", "find the convention (Spec) that reproduces a saved table"),
    "precision": ("harness.precision", "error vs position for each dtype and approach"),
    "conventions": ("harness.convention_matrix", "which implementations produce the same table"),
}


def _verb_modules() -> dict:
    return {verb: importlib.import_module(name) for verb, (name, _) in VERBS.items()}


def build_parser(modules: dict) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--plugin", action="append", default=[], metavar="FILE_OR_MODULE",
                        help="load implementations from a .py file or module (repeatable)")
    common.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="only implementations whose name matches (repeatable)")
    common.add_argument("--out", metavar="DIR",
                        help="output directory (default: results/)")
    common.add_argument("--quick", action="store_true", help="a small, fast case grid")
    parser = argparse.ArgumentParser(prog="pe-harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, module in modules.items():
        p = sub.add_parser(verb, parents=[common], help=VERBS[verb][1], description=module.__doc__)
        module.configure(p)
    return parser


def parse(modules: dict, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parsed arguments; every verb gets an --out directory, and `report` learns whether it
    was given (a default set on one subparser would change the shared option for all)."""
    args = build_parser(modules).parse_args(argv)
    args.out_given, args.out = args.out is not None, args.out or DEFAULT_OUT
    return args


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness import PluginError, implementations

    modules = _verb_modules()
    args = parse(modules, argv)
    try:
        impls = implementations(args.plugin)
    except PluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return modules[args.verb].main(args, impls)
    except ValueError as exc:  # bad input: one clear line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: everything finished so far is on disk", file=sys.stderr)
        return 130
