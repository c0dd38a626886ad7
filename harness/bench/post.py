"""After the sweep, in the run directory: verify, conventions and precision at once, roofs, the report.

Each verb runs as `python -m harness VERB --out RUN_DIR` with the sweep's
--plugin/--only/--quick, in its own process and log, tied to bench by
harness.util.lifeline and holding the run's lock. Verify isolates the
implementations itself, so a step that still fails is the harness's failure:
exit code 0 is "ok", 1 (verify found wrong implementations: the report shows
them) is "found", anything else is "failed". A failed step stops neither
the others nor the report, because the timings are already safe on disk. `roofs`
(harness.bench.paired) times: it runs alone, after the checks (it needs verify.csv), before
the report. Before the report is built,
`post_failures.json` lists the failed steps (an empty list when none failed),
so the report can name them at its top; `bench` then exits 3. The report
needs verify.csv ("passes verify"), so it comes last, as `python -m harness
report RUN_DIR` like the others (no verb imports another); post.json records
every step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Optional, Protocol, Sequence

from harness.core.isolate import describe_exit
from harness.util import exitcodes, io, lifeline

FILENAME = "post.json"
#: [{"step": "verify", "status": "failed", "detail": "exited with code 3",
#:   "log": "logs/post-verify.log"}], the log relative to the run directory; [] when none failed
FAILURES = "post_failures.json"
#: What runs after a sweep, in order (the report comes after them)
VERBS = ("verify", "conventions", "precision", "roofs")
#: Steps that time something: each runs alone, after the others, before the report.
ALONE = ("roofs",)
FAILED = ("failed", "error")
#: How often a running step lets the live line's clock move, in seconds.
TICK_S = 0.5


@dataclass(frozen=True)
class Step:
    """One post-step: what ran, how it ended, how long it took, where its output went."""

    name: str
    status: str          # ok, found (verify: wrong implementations), failed, error, skipped
    detail: str
    seconds: float
    output: str = ""
    log: str = ""        # relative to the run directory

    @property
    def failed(self) -> bool:
        return self.status in FAILED


def run_verb(verb: str, run_dir: Path, plugins: Sequence[str], only: Sequence[str],
             quick: bool, keep_fds: Sequence[int] = (),
             tick: Callable[[], None] = lambda: None, extra: Sequence[str] = ()) -> Step:
    target = [str(run_dir)] if verb in ("report", "roofs") else []   # they read the run they write to
    argv = [sys.executable, "-m", "harness", verb, *target, "--out", str(run_dir), *extra]
    argv += [a for p in plugins for a in ("--plugin", p)]
    argv += [a for g in only for a in ("--only", g)]
    argv += ["--quick"] if quick else []
    log = run_dir / "logs" / f"post-{verb}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "w") as f, lifeline.Lifeline() as line:
        try:
            proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                    env=_env(line), pass_fds=(*line.fds, *keep_fds))
        finally:
            line.started()
        code = _wait(proc, tick)
    status = {exitcodes.OK: "ok", exitcodes.FINDING: "found" if verb == "verify" else "failed"}
    detail = describe_exit(code) + (" (wrong implementations: see verify.md)"
                                    if code == exitcodes.FINDING and verb == "verify" else "")
    return Step(verb, status.get(code, "failed"), detail, time.monotonic() - start, str(run_dir),
                str(log.relative_to(run_dir)))


def _wait(proc: subprocess.Popen, tick: Callable[[], None]) -> int:
    """The step's exit code; `tick` every TICK_S meanwhile (the live line's clock)."""
    while True:
        try:
            return proc.wait(timeout=TICK_S)
        except subprocess.TimeoutExpired:
            tick()


def _env(line: lifeline.Lifeline) -> dict[str, str]:
    return {**os.environ, **line.env}


def run_all(run_dir: Path, plugins: Sequence[str], only: Sequence[str], quick: bool,
            keep_fds: Sequence[int] = (), verbs: Optional[Sequence[str]] = None,
            console: Optional[Reporter] = None,
            extra: Mapping[str, Sequence[str]] = MappingProxyType({})) -> list[Step]:
    """Every post-step in order, each shown as it starts and ends (on `console`, else printed),
    each verb with its `extra` arguments; post_failures.json before the report, post.json at
    the end."""
    say = console or _Printer()
    chosen = list(VERBS if verbs is None else verbs)
    checks = [v for v in chosen if v not in ALONE]
    steps: list[Step] = []

    def one(verb: str, tick: Callable[[], None]) -> Step:
        return run_verb(verb, run_dir, plugins, only, quick, keep_fds, tick, extra.get(verb, ()))

    if checks:
        name = together(checks)
        say.begin(name)
        steps = _run_together(checks, one, say.tick)
        say.end(name, "\n".join(_describe(s) for s in steps))
    for verb in [v for v in chosen if v in ALONE] + ["report"]:
        if verb == "report":
            write_failures(run_dir, steps)
        say.begin(verb)
        steps.append(one(verb, say.tick))
        say.end(verb, _describe(steps[-1]))
    write_failures(run_dir, steps)
    io.write_text(run_dir / FILENAME, json.dumps([asdict(s) for s in steps], indent=2) + "\n")
    return steps


def together(verbs: Sequence[str]) -> str:
    """The name the console shows for post-steps that run at once."""
    return " + ".join(verbs)


def estimate_together(estimate: Mapping[str, float], verbs: Sequence[str]) -> dict[str, float]:
    """Seconds per verb -> seconds per thing the console waits for: the checks run at once,
    so they take as long as the longest of them (then the steps that time, then the report)."""
    checks = [v for v in verbs if v not in ALONE]
    out = {k: v for k, v in estimate.items() if k not in checks}
    if checks:
        out[together(checks)] = max(estimate.get(v, 0.0) for v in checks)
    return out


def _run_together(verbs: Sequence[str], run: Callable[[str, Callable[[], None]], Step],
                  tick: Callable[[], None]) -> list[Step]:
    """Each verb in its own process, all at once (they only read the run's timings and write
    their own files; nothing is being timed any more, so they may share the cores); their
    Steps in the order of `verbs`. `tick` every TICK_S meanwhile, from this thread only."""
    with ThreadPoolExecutor(max_workers=len(verbs)) as pool:
        futures = {verb: pool.submit(run, verb, lambda: None) for verb in verbs}
        pending = set(futures.values())
        while pending:
            _, pending = wait(pending, timeout=TICK_S)
            tick()
    return [futures[verb].result() for verb in verbs]


def write_failures(run_dir: Path, steps: Sequence[Step]) -> Path:
    """post_failures.json: [{"step", "status", "detail", "log"}] for each failed step."""
    failed = [{"step": s.name, "status": s.status, "detail": s.detail, "log": s.log}
              for s in steps if s.failed]
    return io.write_text(run_dir / FAILURES, json.dumps(failed, indent=2) + "\n")


def read_failures(run_dir: Path) -> list[dict[str, str]]:
    """The failed post-steps of a run ([] when none failed or none ran)."""
    try:
        data = json.loads((Path(run_dir) / FAILURES).read_text())
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def _describe(step: Step) -> str:
    detail = step.detail + (f"; log {step.log}" if step.log else "")
    return (f"post: {step.name} {step.status} in {step.seconds:.0f} s"
            + (f" ({detail})" if step.detail and step.status != "ok" else ""))


class Reporter(Protocol):
    """Where post-steps are shown (harness.bench.console.Console)."""

    def begin(self, step: str) -> None: ...

    def end(self, step: str, text: str) -> None: ...

    def tick(self) -> None: ...


class _Printer:
    """Plain lines, for a caller without a console."""

    def begin(self, step: str) -> None:
        print(f"post: {step} ...", flush=True)

    def end(self, step: str, text: str) -> None:
        print(text, flush=True)

    def tick(self) -> None:
        pass
