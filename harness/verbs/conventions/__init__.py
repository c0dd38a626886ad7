"""`python -m harness conventions`: which implementations agree, and how far apart conventions are.

Libraries disagree on layout, frequency schedule, sin/cos order, first
position and odd widths. This verb builds every available table
implementation on a grid of probe conventions (64 positions; width 16, and
17 for the odd-width policies), keeps the ones each implementation supports,
and groups what comes back: per probe, the implementations whose tables agree
within tolerance; across probes, the implementations that agree everywhere
(equivalence classes). The distance between two conventions is the largest
difference between their tables - how wrong a table read under the wrong
convention is. Writes conventions.csv, convention_distances.csv and
conventions.md under --out. Each backend's implementations run in a child
process (harness.core.isolate): one that crashes gets error cells, the rest go on. They only
hand back what they returned; the comparison, the tolerance and the reference are this
process's, which never imports an implementation (harness.core.catalog), so a plugin that
patches numpy at import changes no answer.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from functools import partial
from itertools import product
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pandas as pd

from harness.core import isolate, observe
from harness.core.checks import compare
from harness.core.kinds.table.reference import reference
from harness.core.registry import Implementation
from harness.core import selection
from harness.core.kinds.table.spec import LAYOUTS, Spec
from harness.core.kinds.table.tolerance import exact_tolerance, tolerance
from harness.util import arguments, io, tables
from harness.util.deadline import CallTimeout, call_with_deadline
from harness.verbs.conventions import each_kind

PROBE_LENGTH = 64
EVEN_WIDTH, ODD_WIDTH = 16, 17
PROBE_OFFSETS = (0, 2)             # 2: fairseq's first position (padding_idx + 1)
PROBE_DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class Probe:
    """One convention to probe, with a short label for tables."""

    label: str
    spec: Spec


@dataclass(frozen=True)
class MatrixCell:
    """What one implementation produced for one probe."""

    impl: str
    probe: str
    status: str                  # match | differs | error | skip
    max_abs_err: float = float("nan")
    reason: str = ""
    grade: str = ""              # exact | float32 for a match (harness.core.contract)


def label(spec: Spec) -> str:
    """'concat shift=1 cos|sin odd=pad offset=2': the convention, for table rows."""
    order = "cos|sin" if spec.cos_first else "sin|cos"
    parts = [spec.layout, f"shift={spec.freq_shift:g}", order]
    if spec.d_model % 2:
        parts.append(f"odd={spec.odd}")
    if spec.offset:
        parts.append(f"offset={spec.offset}")
    return " ".join(parts)


def probes(quick: bool = False) -> list[Probe]:
    """Layout x freq_shift x cos_first, at offsets 0 and 2, and under both odd-width policies."""
    specs = [Spec(PROBE_LENGTH, EVEN_WIDTH, layout=layout, freq_shift=shift, cos_first=cos_first,
                  offset=offset)
             for offset, layout, shift, cos_first in product(
                 PROBE_OFFSETS[:1] if quick else PROBE_OFFSETS, LAYOUTS, (0, 1), (False, True))]
    if not quick:
        specs += [Spec(PROBE_LENGTH, ODD_WIDTH, layout=layout, freq_shift=shift,
                       cos_first=cos_first, odd=odd)
                  for odd, layout, shift, cos_first in product(("pad", "extend"), LAYOUTS, (0, 1),
                                                                (False, True))]
    return [Probe(label(s), s) for s in specs]


# -- measuring ------------------------------------------------------------------------

@dataclass(frozen=True)
class Sent:
    """What an implementation's process sends for one probe: a skip or error cell, or the dtype
    it built and a copy of what it returned (harness.core.observe), judged in the parent."""

    cell: MatrixCell
    dtype: str = ""
    result: Optional[observe.Returned] = None


def run_cell(impl: Implementation, probe: Probe, timeout_s: float) -> Sent:
    """Build and call `impl` on the probe (float32, else float64) and copy what it returned;
    judge nothing (this runs where the implementation runs)."""
    if not impl.available:
        return Sent(MatrixCell(impl.name, probe.label, "skip",
                                   reason=impl.unavailable_reason() or ""))
    spec = next((probe.spec.replace(dtype=d) for d in PROBE_DTYPES
                 if impl.supports(probe.spec.replace(dtype=d)) is None), None)
    if spec is None:
        return Sent(MatrixCell(impl.name, probe.label, "skip",
                                   reason=impl.supports(probe.spec) or ""))
    try:
        out = call_with_deadline(call_with_deadline(lambda: impl.build(spec), timeout_s), timeout_s)
    except Exception as exc:
        return Sent(MatrixCell(impl.name, probe.label, "error",
                                   reason=f"{type(exc).__name__}: {exc}"))
    return Sent(MatrixCell(impl.name, probe.label, ""), spec.dtype, observe.snapshot(out))


def judge_cell(sent: Sent, probe: Probe) -> tuple[MatrixCell, Optional[np.ndarray]]:
    """The verdict on what an implementation's process sent for `probe`, made here against the
    reference and tolerance computed here; the table, for grouping, when it is finite."""
    if not isinstance(sent, Sent):
        return MatrixCell("", probe.label, "error",
                          reason=f"its process sent a {type(sent).__name__}, not a result"), None
    if sent.result is None:
        return sent.cell, None
    spec = probe.spec.replace(dtype=sent.dtype)
    result = compare(sent.result, reference(spec), tolerance(spec), spec.dtype,
                     exact=exact_tolerance(spec))
    finite = np.isfinite(result.max_abs_err) and sent.result.array is not None
    table = sent.result.array.astype(np.float64) if finite else None
    status = "match" if result.reason is None else "differs" if table is not None else "error"
    grade = result.grade if status == "match" else ""
    return replace(sent.cell, status=status, max_abs_err=result.max_abs_err,
                   reason=result.reason or "", grade=grade), table


def impl_cells(impl: Implementation, grid: Sequence[Probe], timeout_s: float) -> Iterator[Sent]:
    """One implementation at every probe (the task harness.core.isolate runs in a child process);
    after a first timeout the rest are not run (one hang costs one timeout)."""
    hung = False
    for probe in grid:
        if hung:
            yield Sent(MatrixCell(impl.name, probe.label, "error",
                                      reason="not run: an earlier probe timed out"))
            continue
        sent = run_cell(impl, probe, timeout_s)
        hung = sent.cell.reason.startswith(CallTimeout.__name__)
        yield sent


def lost_cells(grid: Sequence[Probe], impl: Implementation, rows: list,
               why: str) -> list[Sent]:
    """The probes a dead process did not finish: errors, the first with why it died."""
    return [Sent(MatrixCell(impl.name, p.label, "error",
                                reason=why if i == 0 else "not run: its process died on an "
                                                          "earlier probe"))
            for i, p in enumerate(grid[len(rows):])]


def build_tables(impls: Sequence[Implementation], grid: Sequence[Probe], timeout_s: float,
            isolation: Optional[isolate.Isolation] = None,
            ) -> tuple[list[MatrixCell], dict[tuple[str, str], str]]:
    """Every cell, and per (impl, probe) the class of table it produced at that probe: the
    implementations only hand back what they returned; the verdicts and classes are made here."""
    grid = tuple(grid)
    task = isolate.Task("harness.verbs.conventions:impl_cells", (grid, timeout_s))
    by_impl = isolate.run(impls, task, partial(lost_cells, grid), isolation)
    cells: list[MatrixCell] = []
    classes: dict[tuple[str, str], str] = {}
    for i, probe in enumerate(grid):
        produced: dict[str, np.ndarray] = {}
        for impl in impls:
            cell, table = judge_cell(by_impl[impl.name][i], probe)
            cell = replace(cell, impl=impl.name)
            cells.append(cell)
            if table is not None:
                produced[impl.name] = table
        allowed = 2.0 * tolerance(probe.spec.replace(dtype="float32"))
        for name, group in group_tables(reference(probe.spec), produced, allowed).items():
            classes[(name, probe.label)] = group
    return cells, classes


def group_tables(expected: np.ndarray, produced: dict[str, np.ndarray],
                 allowed: np.ndarray) -> dict[str, str]:
    """'=' for tables within `allowed` of the reference; other tables clustered as x1, x2, ..."""
    seeds: list[tuple[str, np.ndarray]] = [("=", expected)]
    out = {}
    for name, table in produced.items():
        for group, seed in seeds:
            if table.shape == seed.shape and np.all(np.abs(table - seed) <= allowed):
                out[name] = group
                break
        else:
            group = f"x{len(seeds)}"
            seeds.append((group, table))
            out[name] = group
    return out


def equivalence_classes(impls: Sequence[str], grid: Sequence[Probe],
                        classes: dict[tuple[str, str], str]) -> list[tuple[list[str], list[str]]]:
    """Implementations with the same table class at every probe: (members, probes produced)."""
    by_signature: dict[tuple[str, ...], list[str]] = {}
    for name in impls:
        signature = tuple(classes.get((name, p.label), "-") for p in grid)
        by_signature.setdefault(signature, []).append(name)
    out = []
    for signature, members in by_signature.items():
        produced = [p.label + ("" if c == "=" else f" ({c}: differs)")
                    for p, c in zip(grid, signature) if c != "-"]
        out.append((members, produced))
    return sorted(out, key=lambda mc: (-len(mc[1]), mc[0]))


def distances(grid: Sequence[Probe]) -> pd.DataFrame:
    """Max and RMS difference between the reference tables of every pair of same-width probes."""
    refs = {p.label: (p.spec.d_model, reference(p.spec)) for p in grid}
    rows = [{"a": a, "b": b, "d_model": da, "max_abs_diff": float(np.abs(ta - tb).max()),
             "rms_diff": float(np.sqrt(np.mean((ta - tb) ** 2)))}
            for a, (da, ta) in refs.items() for b, (db, tb) in refs.items() if da == db]
    return pd.DataFrame(rows)


# -- presenting -----------------------------------------------------------------------

def cells_frame(cells: Sequence[MatrixCell], grid: Sequence[Probe],
                classes: dict[tuple[str, str], str]) -> pd.DataFrame:
    specs = {p.label: p.spec for p in grid}
    return pd.DataFrame([{"probe": c.probe, **specs[c.probe].as_dict(), "impl": c.impl,
                          "status": c.status, "grade": c.grade,
                          "table_class": classes.get((c.impl, c.probe), ""),
                          "max_abs_err": c.max_abs_err, "reason": c.reason} for c in cells])


def markdown(grid: Sequence[Probe], cells: Sequence[MatrixCell], classes: dict[tuple[str, str], str],
             dist: pd.DataFrame, libraries: frozenset[str] = frozenset()) -> str:
    """conventions.md; `libraries`: the names of the library conventions (references)."""
    names = list(dict.fromkeys(c.impl for c in cells))
    groups = equivalence_classes(names, grid, classes)
    lines = ["# Conventions", "",
             f"Probes: {PROBE_LENGTH} positions, width {EVEN_WIDTH} (and {ODD_WIDTH} for the "
             "odd-width policies), base 10000. `=`: the table agrees with the float64 reference "
             "within tolerance; `(float32)`: only at the float32 grade (harness/core/contract.py), "
             "not within a few ulps everywhere.", "", "## Which implementations produce which convention", ""]
    graded = {(c.impl, c.probe): c.grade for c in cells}
    rows = []
    for p in grid:
        producers = [n + (" (float32)" if graded.get((n, p.label)) == "float32" else "")
                     for n in names if classes.get((n, p.label)) == "="]
        wrong = [f"{n} ({classes[(n, p.label)]})" for n in names
                 if classes.get((n, p.label), "=") != "="]
        libs = [n for n in producers if n.split(" ")[0] in libraries]
        others = [n for n in producers if n.split(" ")[0] not in libraries]
        rows.append([p.label, ", ".join(libs) or "-", len(others), ", ".join(wrong) or "-"])
    lines.append(tables.markdown(["convention", "libraries", "other implementations",
                                  "differ from the reference"], rows))
    lines += ["", "## Equivalence classes", "",
              "Implementations that produce the same table at every probe they support.", ""]
    ran = [(members, produced) for members, produced in groups if produced]
    lines.append(tables.markdown(["class", "implementations", "conventions produced"],
                                 [[i + 1, ", ".join(members), len(produced)]
                                  for i, (members, produced) in enumerate(ran)]))
    lines += ["", f"## Distance between conventions (width {EVEN_WIDTH}, offset 0)", "",
              "Max |difference| (RMS difference) between the two tables: what reading a table "
              "under the wrong convention costs. Sin and cos are in [-1, 1], so a max of 2 is as "
              "far apart as values get; the RMS tells a near miss from a scrambled table.", ""]
    main = [p.label for p in grid if p.spec.d_model == EVEN_WIDTH and not p.spec.offset]
    pair = dist[dist.a.isin(main) & dist.b.isin(main)].set_index(["a", "b"])
    cell = {ab: f"{r.max_abs_diff:.2f} ({r.rms_diff:.2f})" for ab, r in pair.iterrows()}
    lines.append(tables.markdown(["convention", *[f"({i + 1})" for i in range(len(main))]],
                                 [[f"({i + 1}) {a}", *[cell[(a, b)] for b in main]]
                                  for i, a in enumerate(main)]))
    idle = [m for members, produced in groups if not produced for m in members]
    if idle:
        lines += ["", f"Not run here (unavailable or no probe supported): {', '.join(idle)}."]
    return "\n".join(lines) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="seconds one build or call may take before it is recorded as an error")
    isolate.add_option(parser)


#: The kind this module's matrix reads (its workload of the same name); every other kind's
#: implementations go to each_kind.py, which reads any kind through its named conventions.
MATRIX_KIND = "table"


#: The cli hands this verb the implementations' identities (harness.core.catalog), never their
#: code: the probes' tables are judged and grouped in a process no implementation entered.
JUDGE_APART = True


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    selected = selection.chosen(impls, args.only)
    chosen = [i for i in selected if i.workload == MATRIX_KIND]
    family = [i for i in selected if i.kind != MATRIX_KIND]
    timeout_s = arguments.positive_seconds(args.timeout_s, "--timeout-s")
    isolation = isolate.from_args(args, 2 * timeout_s + 60)
    out = Path(args.out)
    text, differs = "", set()
    if chosen:
        grid = probes(args.quick)
        cells, classes = build_tables(chosen, grid, timeout_s, isolation)
        dist = distances(grid)
        io.write_csv(out / "conventions.csv", cells_frame(cells, grid, classes))
        io.write_csv(out / "convention_distances.csv", dist)
        text = markdown(grid, cells, classes, dist, frozenset(i.name for i in chosen if i.reference))
        differs = {c.impl for c in cells if c.status in ("differs", "error")}
    if family:
        rows = each_kind.run(family, timeout_s, isolation)
        io.write_csv(out / "family_conventions.csv", rows)
        text += each_kind.markdown(rows)
        differs |= set(rows.loc[rows["status"].isin(["fail", "error"]), "impl"])
    io.write_text(out / "conventions.md", text)
    print(f"{len(chosen) + len(family)} implementations; wrote {out / 'conventions.md'}")
    if differs:
        print(f"differ from the reference somewhere: {', '.join(sorted(differs))}")
    return 0
