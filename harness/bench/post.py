"""After the sweep, in the run directory: verify (conventions, precision where they exist), the report.

Each verb runs as `python -m harness VERB --out RUN_DIR` with the sweep's
--plugin/--only/--quick, in its own process and log; a failing step is
recorded in post.json and the next one still runs, because the timings are
already safe on disk. The report needs verify.csv ("passes verify"), so it
comes last, built in-process by `harness.report.build` when that module exists.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from harness import io

FILENAME = "post.json"
OPTIONAL_VERBS = ("conventions", "precision")


@dataclass(frozen=True)
class Step:
    """One post-step: what ran, how it ended, how long it took, where its output went."""

    name: str
    status: str          # "ok", "failed", "error" or "skipped"
    detail: str
    seconds: float
    output: str = ""


def available_verbs() -> list[str]:
    """verify, plus the optional verbs whose module the CLI knows and can import."""
    from harness.cli import VERBS

    verbs = ["verify"]
    for verb in OPTIONAL_VERBS:
        if verb not in VERBS:
            continue
        try:
            importlib.import_module(VERBS[verb][0])
        except Exception:  # not written yet, or broken: the sweep's results still stand
            continue
        verbs.append(verb)
    return verbs


def run_verb(verb: str, run_dir: Path, plugins: Sequence[str], only: Sequence[str],
             quick: bool) -> Step:
    argv = [sys.executable, "-m", "harness", verb, "--out", str(run_dir)]
    argv += [a for p in plugins for a in ("--plugin", p)]
    argv += [a for g in only for a in ("--only", g)]
    argv += ["--quick"] if quick else []
    log = run_dir / "logs" / f"post-{verb}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "w") as f:
        code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT).returncode
    status = "ok" if code == 0 else "failed"
    return Step(verb, status, f"exit code {code}; log {log}", time.monotonic() - start, str(run_dir))


def build_report(run_dir: Path) -> Step:
    start = time.monotonic()
    if importlib.util.find_spec("harness.report") is None:
        return Step("report", "skipped", "harness.report is not installed", 0.0)
    try:
        report = importlib.import_module("harness.report")
        path = report.build([run_dir])
    except Exception as exc:
        return Step("report", "error", f"{type(exc).__name__}: {exc}", time.monotonic() - start)
    return Step("report", "ok", "", time.monotonic() - start, str(path))


def run_all(run_dir: Path, plugins: Sequence[str], only: Sequence[str], quick: bool) -> list[Step]:
    """Every post-step in order, each printed as it ends; post.json records them."""
    steps = []
    for verb in available_verbs():
        print(f"post: {verb} ...", flush=True)
        steps.append(run_verb(verb, run_dir, plugins, only, quick))
        _print(steps[-1])
    steps.append(build_report(run_dir))
    _print(steps[-1])
    io.write_text(run_dir / FILENAME, json.dumps([asdict(s) for s in steps], indent=2) + "\n")
    return steps


def _print(step: Step) -> None:
    print(f"post: {step.name} {step.status} in {step.seconds:.0f} s"
          + (f" ({step.detail})" if step.detail and step.status != "ok" else ""), flush=True)
