"""The 1-D table's precision study: error vs position for each dtype and way of computing it.

At log-spaced positions out to 1e6 (a window of consecutive positions at each), for a narrow
table (d_model 16, base 10000), every method of harness.verbs.precision.methods in every dtype
its backend offers, plus the registered implementations --only selects, each against the
float64 reference, in one child process per backend (harness.core.isolate).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pandas as pd

from harness.core import isolate
from harness.core.convert import to_numpy
from harness.core.kinds.table.reference import angles, reference
from harness.core.registry import Implementation
from harness.core.kinds.table.spec import Spec
from harness.core.kinds.table.tolerance import eps
from harness.util import tables
from harness.util.deadline import CallTimeout, call_with_deadline
from harness.verbs.precision.methods import METHODS, array_ops

#: The kind this study measures (the verb reaches the others' studies through runner.py).
KIND = "table"
PROBE_WIDTH = 16
WINDOW = 8
LAST_POSITION = 10**6
DTYPES = ("float32", "float16", "bfloat16")
SHOWN_POSITIONS = (100, 10_000, 1_000_000)
METHOD_COLORS = {"direct": "tab:red", "f64-angles": "tab:orange", "angle-addition": "tab:green",
                 "f64-table": "tab:blue"}


@dataclass(frozen=True)
class Point:
    """Largest |error| over one window of positions starting at `position`."""

    source: str          # "torch angle-addition", or a registered implementation's name
    backend: str
    method: str
    dtype: str
    position: int
    max_abs_err: float   # inf when the result overflowed to Inf/NaN


def window_starts(quick: bool = False) -> list[int]:
    """0, then log-spaced starts up to LAST_POSITION - WINDOW."""
    n = 13 if quick else 25
    spaced = np.round(np.logspace(0, math.log10(LAST_POSITION), n)).astype(np.int64)
    return sorted({0, *np.minimum(spaced, LAST_POSITION - WINDOW).tolist()})


def probe_spec(start: int, dtype: str = "float32") -> Spec:
    """The narrow window the study measures: WINDOW positions from `start`."""
    return Spec(WINDOW, PROBE_WIDTH, offset=start, dtype=dtype)


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max()) if np.isfinite(got).all() else math.inf


def measure_methods(starts: Sequence[int]) -> list[Point]:
    """Every backend x dtype x method at every window."""
    points = []
    for start in starts:
        spec = probe_spec(start)
        theta = angles(spec)
        positions = np.arange(spec.offset, spec.offset + spec.length, dtype=np.int64)
        for be in array_ops():
            for dtype in be.dtypes:
                for name, method in METHODS.items():
                    with np.errstate(all="ignore"):
                        s, c = method(be, positions, spec.base, spec.denominator, spec.n_freq,
                                      dtype)
                    err = max(_error(s, np.sin(theta)), _error(c, np.cos(theta)))
                    points.append(Point(f"{be.name} {name}", be.name, name, dtype, start, err))
    return points


def impl_items(impl: Implementation, starts: Sequence[int]) -> list[Spec]:
    """The windows a registered implementation is measured on: each dtype it supports."""
    return [probe_spec(start, dtype) for dtype in DTYPES for start in starts
            if impl.supports(probe_spec(start, dtype)) is None]


def impl_points(impl: Implementation, starts: Sequence[int], timeout_s: float) -> Iterator[Point]:
    """One implementation on its windows (the task harness.core.isolate runs in a child process);
    after a first timeout the rest are not run (one hang costs one timeout)."""
    hung = False
    for spec in impl_items(impl, starts):
        err = math.nan
        try:
            if not hung:
                table = call_with_deadline(lambda: impl.build(spec), timeout_s)
                out = call_with_deadline(table, timeout_s)
                err = _error(to_numpy(out).astype(np.float64), reference(spec))
        except CallTimeout:
            hung = True
        except Exception:          # a study, not a verdict: verify reports failures
            pass
        yield Point(impl.name, impl.backend, "registered", spec.dtype, spec.offset, err)


def lost_points(starts: Sequence[int], impl: Implementation, rows: list, why: str) -> list[Point]:
    """The windows a dead process did not finish: NaN, like any other failure here."""
    return [Point(impl.name, impl.backend, "registered", s.dtype, s.offset, math.nan)
            for s in impl_items(impl, starts)[len(rows):]]


def measure_impls(impls: Sequence[Implementation], starts: Sequence[int], timeout_s: float,
                  isolation: Optional[isolate.Isolation] = None) -> list[Point]:
    """Registered table implementations on the same windows, in each dtype they support."""
    chosen = [i for i in impls if i.available and i.workload == KIND]
    task = isolate.Task("harness.verbs.precision.table:impl_points", (tuple(starts), timeout_s))
    by_impl = isolate.run(chosen, task, partial(lost_points, tuple(starts)), isolation)
    return [p for points in by_impl.values() for p in points]


# -- presenting -----------------------------------------------------------------------

def frame(points: Sequence[Point]) -> pd.DataFrame:
    df = pd.DataFrame([asdict(p) for p in points])
    df["ulps"] = df.max_abs_err / df.dtype.map(eps)
    return df


def summary(df: pd.DataFrame) -> tuple[list[str], list[list]]:
    """One row per (source, dtype): error at a few positions and over all of them."""
    headers = ["source", "dtype", *[f"p={p:,}" for p in SHOWN_POSITIONS], "worst", "worst ulps"]
    rows = []
    for (source, dtype), part in df.groupby(["source", "dtype"], sort=False):
        at = part.set_index("position").max_abs_err
        near = [_near(at, p) for p in SHOWN_POSITIONS]
        worst = float(part.max_abs_err.max())
        rows.append([source, dtype, *[_show(v) for v in near], _show(worst),
                     _show(worst / eps(dtype))])
    return headers, rows


def _near(at: pd.Series, position: int) -> float:
    """The error of the window starting closest to `position` (NaN if none is within 40%)."""
    starts = at.index.to_numpy()
    i = int(np.argmin(np.abs(np.log((starts + 1) / position))))
    return float(at.iloc[i]) if abs(math.log((starts[i] + 1) / position)) < 0.35 else math.nan


def _show(value: float) -> str | float:
    return "overflow" if math.isinf(value) else value


def markdown(df: pd.DataFrame) -> str:
    headers, rows = summary(df)
    return ("# Precision\n\n"
            f"Largest |error| against the float64 reference over {WINDOW} consecutive positions "
            f"starting at p, for a {PROBE_WIDTH}-wide table (base 10000). `overflow`: the result "
            "held Inf/NaN (float16 positions overflow past 65504). Methods: "
            "harness/verbs/precision/methods.py; guide: docs/precision.md.\n\n"
            + tables.markdown(headers, rows) + "\n\n![error vs position](plots/precision.png)\n")


def plot(df: pd.DataFrame, path: Path) -> Path:
    """One panel per dtype: error vs position, one line per source; half an ulp for scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = [d for d in DTYPES if d in set(df.dtype)]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(5.2 * len(dtypes), 4.4), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        for i, (source, part) in enumerate(df[df.dtype == dtype].groupby("source", sort=False)):
            x = part.position.to_numpy() + 1
            y = np.clip(part.max_abs_err.to_numpy(), 1e-12, 2.0)   # overflow drawn at 2
            method, backend = part.method.iloc[0], part.backend.iloc[0]
            color = METHOD_COLORS.get(method, f"C{4 + i % 6}")
            style = {"numpy": "--", "torch": "-"}.get(backend, ":")
            ax.loglog(x, y, style, color=color, marker="." if backend == "torch" else "x",
                      ms=4, lw=1.2, label=source)
        ax.axhline(eps(dtype) / 2, color="grey", lw=0.8, ls=":", label="half an ulp of 1")
        ax.set(title=dtype, xlabel="position + 1", ylabel="max |error|", ylim=(1e-10, 3))
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
