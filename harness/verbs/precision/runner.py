"""`precision` for the kinds besides the 1-D table: each kind's studies (`Kind.studies`: rotary
caches and apply, timestep embeddings, grids).

The 1-D table study (harness/verbs/precision.py) shows error vs position for one kind; the
others fail in their own places (bf16 positions past 256, float32 angles at 128k+ contexts,
fp16 timestep angles near t = 1000, half grids at hundreds of positions per axis). Each kind is
measured in its own child process (a crash in torch costs that kind only, and two kinds run at
once on two cores); `in_process=True` runs them here, for tests and debugging.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from harness.core.isolate import ROOT, HarnessFailure, describe_exit, resolve
from harness.core.kinds.table.tolerance import eps
from harness.util.exitcodes import UsageError
from harness.verbs.precision import plots, sections, verdicts
from harness.verbs.precision.common import Point, single_thread
from harness.verbs.precision.studies import KINDS, STUDIES, of_kind

#: a kind's child that runs longer than this is killed and its kind reported as not measured
CHILD_TIMEOUT_S = 600.0
COLUMNS = ("kind", "study", "source", "backend", "method", "dtype", "position", "max_abs_err", "ulps")


def measure_kind(kind: str, quick: bool = False) -> list[Point]:
    """Every study of one kind (a module measuring two studies runs once)."""
    single_thread()
    points: list[Point] = []
    for module in dict.fromkeys(s.module for s in of_kind(kind)):
        probes = next(s.probes_quick if quick else s.probes for s in of_kind(kind) if s.module == module)
        points += resolve(module + ":measure")(list(probes))
    return points


class ChildDied(RuntimeError):
    """A kind's child process crashed or hung: that kind has no points."""


def child() -> None:
    """`python -c` entry: measure_kind(argv[1], quick=argv[2] == "1"), pickled to argv[3]."""
    kind, quick, path = sys.argv[1:4]
    Path(path).write_bytes(pickle.dumps(measure_kind(kind, quick == "1")))


def _in_child(kind: str, quick: bool) -> list[Point]:
    """measure_kind in a fresh interpreter; a study's own exception is a HarnessFailure."""
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="precision-") as tmp:
        result = Path(tmp) / "points.pickle"
        command = [sys.executable, "-c", f"from {__name__} import child; child()", kind,
                   "1" if quick else "0", str(result)]
        try:
            proc = subprocess.run(command, env={**os.environ, "PYTHONPATH": pythonpath},
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ChildDied(f"its child process ran past {CHILD_TIMEOUT_S:g} s and was killed") from None
        if proc.returncode == 0:
            return pickle.loads(result.read_bytes())
        tail = proc.stderr.strip()[-2000:]
        if proc.returncode == 1 and "Traceback" in tail:
            raise HarnessFailure(f"precision study {kind!r} failed:\n{tail}")
        raise ChildDied(f"its child process {describe_exit(proc.returncode)}: {tail[-300:]}")


def measure(kinds: Sequence[str], quick: bool = False,
            in_process: bool = False) -> tuple[list[Point], dict[str, str]]:
    """(the points, kind -> why it has none) for the chosen kinds; a child that dies loses its
    kind only. An exception a study raises is the harness's own bug and propagates."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise UsageError(f"kinds must be among {KINDS}, got {sorted(unknown)}")
    if in_process:
        return [p for kind in kinds for p in measure_kind(kind, quick)], {}
    points, failures = [], {}
    with ThreadPoolExecutor(2) as threads:
        futures = {kind: threads.submit(_in_child, kind, quick) for kind in kinds}
        for kind, future in futures.items():
            try:
                points += future.result()
            except ChildDied as died:
                failures[kind] = str(died)
    return points, failures


@dataclass(frozen=True)
class Result:
    frame: pd.DataFrame
    markdown: str                   # precision.md's sections for these kinds
    choices: list[str]              # "title: dtype: `method`; ..." per study, for the terminal
    plots: list[Path]


def study(kinds: Sequence[str], out: Path, quick: bool = False, in_process: bool = False) -> Result:
    """Measure the kinds, draw plots/precision-<kind>.png under `out`, and say what to use."""
    points, failures = measure(kinds, quick, in_process)
    df = frame(points)
    lines = [f"{s.title}: " + "; ".join(verdicts.choices(verdicts.verdicts(part, s.axis), s.choose_by))
             for s in STUDIES for part in [df[(df.kind == s.kind) & (df.study == s.name)]] if len(part)]
    lines += [f"{kind}: not measured, {why}" for kind, why in failures.items()]
    return Result(df, sections.markdown(df, failures), lines, plots.plot_all(df, out / "plots"))


def frame(points: Sequence[Point]) -> pd.DataFrame:
    df = pd.DataFrame([asdict(p) for p in points], columns=[c for c in COLUMNS if c != "ulps"])
    df["ulps"] = df.max_abs_err / df.dtype.map(eps) if len(df) else []
    return df[list(COLUMNS)]
