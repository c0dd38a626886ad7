"""The report's roof table: per workload and dtype, which limit binds and how near the best gets.

Each output has roofs timed beside it in the same run (harness.bench.roofs): memory roofs (a
bare write of the same bytes, or the read-modify-write pass of `forward` and `apply`) and, for a
compute-bound workload, a compute roof (the same count of float32 sines and cosines through
vector math). bench.csv's `roof_s` is the slower of the two limits, each met the fastest way,
and `roof_bound` names it (harness.runs.results). This section reads them at the largest size
of each workload and dtype: the fastest implementation that passes verify, its ratio to the
binding roof with every thread timed, and beside it its ratio with one thread.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd

from harness.report import fmt, markdown
from harness.report.accuracy import verdict
from harness.report.measures import timed


def _best(rows: pd.DataFrame, verify: Optional[pd.DataFrame]) -> Optional[pd.Series]:
    """The fastest row timed ok whose implementation passes verify in the row's dtype."""
    for _, row in rows.sort_values("median_s").iterrows():
        if verdict(verify, row["impl"], row["dtype"]) is None:
            return row
    return None


def table(bench: pd.DataFrame, verify: Optional[pd.DataFrame]) -> pd.DataFrame:
    """One row per (workload, dtype) at its largest size on the CPU."""
    rows = timed(bench)
    rows = rows[(rows["status"] == "ok") & (rows["device"] == "cpu") & rows["roof_ratio"].notna()]
    out = []
    for (work, dtype), group in rows.groupby(["workload", "dtype"], sort=True):
        size = group["bytes_out"] if "bytes_out" in group else group["length"] * group["d_model"]
        largest = group[size == size.max()]
        most = largest[largest["threads"] == largest["threads"].max()]
        best = _best(most, verify)
        if best is None:
            continue
        one = largest[(largest["threads"] == 1) & (largest["impl"] == best["impl"])]
        out.append({"workload": f"`{work}`", "dtype": dtype,
                    "size": f"{int(best['length'])} x {int(best['d_model'])}",
                    "bound": best.get("roof_bound", "memory"), "best (passes verify)": best["impl"],
                    f"x roof, {fmt.threads(int(best['threads']))}": fmt.ratio(best["roof_ratio"]),
                    "x roof, 1 thread": fmt.ratio(one["roof_ratio"].iloc[0]) if len(one) else "-"})
    return pd.DataFrame(out)


def section(bench: pd.DataFrame, verify: Optional[pd.DataFrame]) -> str:
    frame = table(bench, verify)
    if frame.empty:
        return ""
    return markdown.join(
        markdown.heading(2, "Roofs: what bounds each workload"),
        "At the largest size of each workload and dtype: which limit binds (*memory*: the fastest "
        "bare write of the same bytes, or for `forward` and `apply` the bare read-modify-write "
        "pass; *compute*: the same count of float32 sines and cosines through NumPy's or torch's "
        "vector math), and the fastest implementation that passes verify as a multiple of it "
        "(1x: at the limit; below 1x: faster than the bare operation it is measured against).",
        markdown.table(frame, index=False))
