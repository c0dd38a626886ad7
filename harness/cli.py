"""The command line: `python -m harness VERB` (or `pe-harness VERB`).

Every verb shares --plugin, --only, --out and --quick; each verb lives in its
own module with `configure(parser)` and `main(args, impls) -> exit code`.
Exit codes (harness.util.exitcodes): 0 ok, 1 a finding (an implementation is
wrong), 2 a usage error, 3 the harness itself failed, 130 interrupted; every
error is one line on stderr (a harness bug adds its traceback above it). Bad input is a
`UsageError` (a ValueError); any other exception, a plain ValueError included, is a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

from harness.runs import journal
from harness.util import arguments, exitcodes, lifeline
from harness.util.runlock import RunLock

#: Where bench writes its runs, and `report` looks for them, unless --out says otherwise.
DEFAULT_OUT = "results"
#: Where the verbs that also run inside a bench run directory write when run on their own:
#: beside the runs, never into one, and ignored by git (/results/_*/).
STANDALONE_OUT = "results/_standalone"
STANDALONE_VERBS = ("verify", "conventions", "precision")
#: Verbs that write under --out (report only when --out is given).
WRITING_VERBS = ("verify", "bench", "conventions", "precision")

VERBS = {
    "list": ("harness.verbs.listing", "show implementations, conventions and availability"),
    "verify": ("harness.verbs.verify", "check every implementation against the float64 reference"),
    "bench": ("harness.bench.cli", "time implementations over a sweep (pytest-benchmark)"),
    "report": ("harness.report.cli", "rebuild report.md and plots from run directories"),
    "identify": ("harness.identify", "find the convention (Spec) that reproduces a saved table"),
    "check-model": ("harness.identify.model", "check a model folder's positional tensors against its config"),
    "precision": ("harness.verbs.precision", "error vs position for each dtype and approach"),
    "conventions": ("harness.verbs.conventions", "which implementations produce the same table"),
    "roofs": ("harness.bench.paired", "time each workload's best against its roof in alternating rounds"),
}


def _verb_modules() -> dict:
    return {verb: importlib.import_module(name) for verb, (name, _) in VERBS.items()}


def build_parser(modules: dict) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--plugin", action="append", default=[], metavar="FILE_OR_MODULE",
                        help="load implementations from a .py file or module (repeatable)")
    common.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="only implementations whose name matches (repeatable)")
    common.add_argument("--quick", action="store_true", help="a small, fast case grid")
    parser = argparse.ArgumentParser(prog="pe-harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, module in modules.items():
        p = sub.add_parser(verb, parents=[common], help=VERBS[verb][1], description=module.__doc__)
        p.add_argument("--out", metavar="DIR",
                       help=f"output directory (default: {default_out(verb)}/)")
        module.configure(p)
    return parser


def default_out(verb: str) -> str:
    return STANDALONE_OUT if verb in STANDALONE_VERBS else DEFAULT_OUT


def parse(modules: dict, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parsed arguments; every verb gets an --out directory, and `report` learns whether it
    was given."""
    args = build_parser(modules).parse_args(argv)
    args.out_given, args.out = args.out is not None, args.out or default_out(args.verb)
    return args


def unknown_verb(argv: Sequence[str]) -> str | None:
    """'unknown verb X; did you mean Y?' when the first word is no verb (None when it is one)."""
    if not argv or argv[0].startswith("-") or argv[0] in VERBS:
        return None
    near = difflib.get_close_matches(argv[0], list(VERBS), n=2, cutoff=0.5)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"unknown verb {argv[0]!r}{hint} (verbs: {', '.join(VERBS)})"


def check_out(args: argparse.Namespace) -> None:
    """An --out a verb will write to must be a directory it can create or write in."""
    if args.verb in WRITING_VERBS or (args.verb == "report" and args.out_given):
        arguments.writable_dir(args.out)


def run_lock(args: argparse.Namespace, post_step: bool) -> contextlib.AbstractContextManager:
    """A verb writing into a bench run directory on its own holds the run's lock while it
    writes (a live bench, or another verb there, is refused with who holds it); a bench
    post-step runs under its bench's lock already. `roofs` writes into the run it is given."""
    writes = args.verb in STANDALONE_VERBS or (args.verb == "report" and args.out_given)
    target = Path(args.run_dir if args.verb == "roofs" else args.out)
    if post_step or not (writes or args.verb == "roofs") or not (target / journal.FILENAME).exists():
        return contextlib.nullcontext()
    return RunLock(target, [f"python -m harness {args.verb}"])


def main(argv: Sequence[str] | None = None) -> int:
    post_step = lifeline.watch()      # started by bench (a post-step): die with it
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness import PluginError
    from harness.core.isolate import HarnessFailure

    wrong = unknown_verb(sys.argv[1:] if argv is None else argv)
    if wrong:
        return _error(wrong, exitcodes.USAGE)
    modules = _verb_modules()
    args = parse(modules, argv)
    try:
        check_out(args)
        impls = _implementations(modules[args.verb], args)
        with run_lock(args, post_step):
            return modules[args.verb].main(args, impls)
    except (exitcodes.UsageError, PluginError) as exc:  # bad input: one clear line, no traceback
        return _error(str(exc), exitcodes.USAGE)
    except KeyboardInterrupt:
        print("\ninterrupted: everything finished so far is on disk", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except HarnessFailure as exc:
        return _error(f"the harness itself failed: {exc}", exitcodes.HARNESS)
    except OSError as exc:    # the machine, not the input: a full disk, a vanished directory
        where = f": {exc.filename}" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}", exitcodes.HARNESS)
    except Exception as exc:  # a bug in the harness: its traceback, then what it means
        traceback.print_exc()
        return _error(f"the harness itself failed ({type(exc).__name__}: {exc}); "
                      "please report it with the traceback above", exitcodes.HARNESS)


def _implementations(module: object, args: argparse.Namespace) -> list:
    """What the verb works on. A verb that judges apart (`JUDGE_APART`: verify, bench,
    conventions) gets the implementations' identities only, learned from a child, so that this
    process never imports one (a verb that plans asks that child its `questions(args)` too: the
    specs whose `supports` answers it needs); identify (`catalog.PLUGINS_APART`) does so only
    when a plugin exists, else loads the built-ins; the others load them here, after a child
    has loaded any user plugin first (a plugin that exits at import is then a usage error
    naming it, not a verb that ran nothing)."""
    from harness import implementations
    from harness.core import catalog, plugins

    if not getattr(module, "NEEDS_IMPLEMENTATIONS", True):
        return []                         # it starts its own worker, which loads them
    apart = getattr(module, "JUDGE_APART", False)
    if apart == catalog.PLUGINS_APART and not plugins.any_plugin(args.plugin):
        return implementations()          # the project's own code only: nothing to keep out
    if apart and not getattr(args, "in_process", False):
        questions = getattr(module, "questions", None)
        return catalog.entries(args.plugin, questions(args) if questions else ())
    if plugins.any_plugin(args.plugin):
        catalog.entries(args.plugin)
    return implementations(args.plugin)


def _error(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
