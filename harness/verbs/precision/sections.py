"""precision.md's sections for the kinds with studies: per study a table, one verdict per method, a choice.

Everything shown is read from the measured rows; the thresholds behind the words are
verify's angle contract (verdicts.bound), and each section says it.
"""

from __future__ import annotations

import math

import pandas as pd

from harness.core.kinds.table.tolerance import eps
from harness.util import tables
from harness.verbs.precision import verdicts
from harness.verbs.precision.studies import KINDS, Study, of_kind


def _value(value: float) -> str | float:
    return "Inf/NaN" if math.isinf(value) else value


def summary(part: pd.DataFrame, study: Study) -> tuple[list[str], list[list]]:
    """One row per source: the error at the shown probes that were measured, and the worst."""
    measured = set(part.position)
    shown = [p for p in study.shown if p in measured]
    headers = ["method", "dtype", *[study.axis.at(p) for p in shown], "worst", "worst ulps"]
    rows = []
    for (source, dtype), rows_of in part.groupby(["source", "dtype"], sort=False):
        at = rows_of.set_index("position").max_abs_err
        worst = float(rows_of.max_abs_err.fillna(math.inf).max())
        rows.append([source.removesuffix(" " + dtype), dtype, *[_value(float(at[p])) for p in shown],
                     _value(worst), _value(worst / eps(dtype))])
    return headers, rows


def section(part: pd.DataFrame, study: Study) -> str:
    found = verdicts.verdicts(part, study.axis)
    headers, rows = summary(part, study)
    lines = [f"## {study.title}", "", study.note, "", tables.markdown(headers, rows), "",
             *[f"- {v.line}" for v in found], "",
             "**Use** (smallest error among the methods exact everywhere): "
             + "; ".join(verdicts.choices(found, study.choose_by)) + ".", ""]
    return "\n".join(lines)


def markdown(df: pd.DataFrame, failures: dict[str, str]) -> str:
    """Every measured study's section, in KINDS order, and a line for each kind whose child died."""
    rule = ("Verdicts, by verify's angle contract (harness/core/contract.py): **use** = exact at "
            f"every probe (within {verdicts.GOOD_ULPS} ulps of 1.0 in the stored dtype, plus "
            "float64's angle error); **avoid** = beyond the float32 contract (the error of an angle "
            "formed in float32, growing with the position) from the probe named; limited = "
            "neither: what verify grades `float32`.")
    blocks = []
    for kind in KINDS:
        if kind in failures:
            blocks.append(f"## {kind}\n\nNot measured: {failures[kind]}\n")
        mine = df[df.kind == kind] if len(df) else df
        for study in of_kind(kind):
            part = mine[mine.study == study.name]
            if len(part):
                blocks.append(section(part, study))
        if len(mine):
            blocks.append(f"![precision of {kind}: error vs {of_kind(kind)[0].axis.name}]"
                          f"(plots/precision-{kind}.png)\n")
    return "\n".join([rule, "", *blocks]) if blocks else ""
