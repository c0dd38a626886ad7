"""`conventions` for the other kinds: which implementations build which named convention.

A rotary cache, a grid or a timestep embedding has named conventions of its own (neox vs
GPT-J layouts, MAE vs DETR grids, diffusers vs ADM timesteps: each kind's `conventions` in
harness.core.kinds). Every implementation of such a kind is checked - as verify checks,
observed in its own process and judged in this one (harness.core.judged) - on one small
probe per convention and dtype; implementations that pass the
same probes form a class, and the distance between two conventions' reference tables says
what reading a table under the wrong one costs. Each backend runs in a child process
(harness.core.isolate), as for the 1-D table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from harness.core import isolate, judged, kinds
from harness.core.registry import Implementation
from harness.util import tables

PROBE_LENGTH, PROBE_WIDTH = 64, 32
PROBE_DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class FamilyProbe:
    """One named convention of one kind, at the probe size, in one dtype."""

    kind: str
    convention: str
    spec: Any

    @property
    def label(self) -> str:
        return f"{self.convention} {self.spec.dtype}"


def probes(kind: kinds.Kind) -> list[FamilyProbe]:
    """Every convention of `kind` in every probe dtype (a convention the probe size cannot
    express is left out)."""
    out = []
    for name in kind.conventions:
        for dtype in PROBE_DTYPES:
            try:
                spec = kind.bench_spec(PROBE_LENGTH, PROBE_WIDTH, dtype, name)
            except ValueError:
                continue
            out.append(FamilyProbe(kind.name, name, spec))
    return out


def run(impls: Sequence[Implementation], timeout_s: float,
        isolation: Optional[isolate.Isolation] = None) -> pd.DataFrame:
    """Every implementation on its kind's probes (the caller leaves out the 1-D table's, which
    the matrix reads): one row per (implementation, probe) with the verdict, made here
    (harness.core.judged: the implementations only hand back what they returned)."""
    rows = []
    for name in dict.fromkeys(i.kind for i in impls):
        mine = [i for i in impls if i.kind == name]
        grid = tuple(probes(kinds.named(name)))
        checks = iter(judged.run(mine, [p.spec for p in grid], timeout_s, isolation=isolation))
        for impl in mine:
            for probe, result in zip(grid, checks):
                rows.append({"kind": name, "convention": probe.convention, "dtype": probe.spec.dtype,
                             "impl": impl.name, "workload": impl.workload, "status": result.status,
                             "grade": result.grade, "max_abs_err": result.max_abs_err,
                             "reason": result.reason})
    return pd.DataFrame(rows)


def distances(kind: kinds.Kind) -> list[list[str]]:
    """Max |difference| between the float64 references of every pair of the kind's conventions
    of the same shape ('-' where the shapes differ)."""
    refs = {p.convention: kind.reference(p.spec) for p in probes(kind) if p.spec.dtype == "float64"}
    names = list(refs)
    return [[f"({i + 1}) {a}", *[f"{np.abs(refs[a] - refs[b]).max():.2f}"
                                 if refs[a].shape == refs[b].shape else "-" for b in names]]
            for i, a in enumerate(names)]


def markdown(frame: pd.DataFrame) -> str:
    """One section per kind: producers of each convention, classes, distances."""
    if frame.empty:
        return ""
    lines = ["", "# The rest of the family", "",
             f"Probes: {PROBE_LENGTH} positions (grid cells, timesteps) x width {PROBE_WIDTH}, in "
             f"{' and '.join(PROBE_DTYPES)}, each checked as `verify` checks; `-`: not supported; "
             "`(float32)`: passed at the float32 grade only (harness/core/contract.py)."]
    for name, rows in frame.groupby("kind", sort=False):
        kind = kinds.named(name)
        lines += ["", f"## {name}: {kind.doc}", ""]
        table = []
        for (convention, dtype), probe in rows.groupby(["convention", "dtype"], sort=False):
            ok = probe[probe["status"] == "pass"]
            passed = sorted(i + (" (float32)" if g == "float32" else "") for i, g in zip(ok["impl"], ok["grade"]))
            failed = sorted(probe.loc[probe["status"].isin(["fail", "error"]), "impl"])
            table.append([convention, dtype, ", ".join(passed) or "-", ", ".join(failed) or "-"])
        lines.append(tables.markdown(["convention", "dtype", "builds it", "fails it"], table))
        lines += ["", "Classes: implementations that pass the same probes.", ""]
        signature = rows.assign(probe=rows["convention"] + " " + rows["dtype"])
        passes = signature[signature["status"] == "pass"].groupby("impl")["probe"].agg(
            lambda p: ", ".join(sorted(p)))
        by_class = passes.reset_index().groupby("probe")["impl"].agg(lambda i: ", ".join(sorted(i)))
        lines.append(tables.markdown(["implementations", "pass"],
                                     [[impls, probe] for probe, impls in by_class.items()]))
        lines += ["", "Max |difference| between the conventions' float64 references:", ""]
        dist = distances(kind)
        lines.append(tables.markdown(["convention", *[f"({i + 1})" for i in range(len(dist))]], dist))
    return "\n".join(lines) + "\n"
