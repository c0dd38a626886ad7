"""The report's roof table: per workload and dtype, which limit binds and how near the best gets.

Each output has roofs timed beside it in the same run (harness.bench.roofs): memory roofs (a
bare write of the same bytes, or the read-modify-write pass of `forward` and `apply`) and, for a
compute-bound workload, a compute roof (the same count of float32 sines and cosines through
vector math). bench.csv's `roof_s` is the slower of the two limits, each met the fastest way,
and `roof_bound` names it (harness.runs.results). This section reads them at the largest size
of each workload and dtype: the fastest implementation that passes verify, its ratio to the
binding roof with every thread timed, and beside it the best that passes with one thread
(named where it is another implementation); and the fastest
first call (a one-off build into fresh memory, JIT already done) of an implementation that
passes verify and does not work in place, over the first call of the fastest memory roof that
allocates fresh memory (an allocate-and-fill, a fresh x + pe or q * 2): both are one call
each, so that ratio is as noisy as one timing is.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd

from harness.report import fmt, markdown
from harness.report.measures import timed
from harness.runs.paired import MEASURES, of
from harness.runs.results import ROOF_KEYS, roof_bound
from harness.runs.verdicts import grade, verdict

#: Roofs writing into memory kept from an earlier call carry this in their names
#: (harness.bench.roofs); the others allocate fresh memory every call.
RECYCLED = "recycled"
#: Implementations rotating their inputs where they lie carry this in their names: their first
#: call builds nothing into fresh memory, so it is not set against an allocate-and-fill.
IN_PLACE = "inplace"


def _best(rows: pd.DataFrame, verify: Optional[pd.DataFrame]) -> Optional[pd.Series]:
    """The fastest row timed ok whose implementation passes verify in the row's dtype."""
    for _, row in rows.sort_values("median_s").iterrows():
        if verdict(verify, row["impl"], row["dtype"]) is None:
            return row
    return None


def first_call_ratio(bench: pd.DataFrame, row: pd.Series) -> float:
    """`row`'s first call over the fastest first call of a fresh-memory roof of the same output
    (NaN where none was timed): what a one-off build costs against allocating and filling.
    A run written before a column existed matches on the columns it has."""
    if "first_call_s" not in bench:
        return float("nan")
    roofs = bench[bench["is_roof"].astype(bool) & (bench["status"] == "ok")]
    roofs = roofs[~roofs["impl"].str.contains(RECYCLED) & (roofs["impl"].map(roof_bound) == "memory")]
    for key in (k for k in ROOF_KEYS if k in bench):   # NaN matches NaN, as bench.csv's merge
        roofs = roofs[(roofs[key] == row[key]) | (roofs[key].isna() & pd.isna(row[key]))]
    fill = roofs["first_call_s"].min()
    return float(row["first_call_s"]) / fill if fill > 0 else float("nan")


def _fastest_first(rows: pd.DataFrame, verify: Optional[pd.DataFrame]) -> Optional[pd.Series]:
    """The row with the fastest first call whose implementation passes verify and builds into
    fresh memory (not in place)."""
    if "first_call_s" not in rows:
        return None
    rows = rows[rows["first_call_s"].notna() & ~rows["impl"].str.contains(IN_PLACE)]
    for _, row in rows.sort_values("first_call_s").iterrows():
        if verdict(verify, row["impl"], row["dtype"]) is None:
            return row
    return None


def table(bench: pd.DataFrame, verify: Optional[pd.DataFrame],
          paired: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """One row per (workload, dtype) at its largest size on the CPU; with `paired`
    (harness.runs.paired), the ratio timed in alternating rounds beside the sweep's."""
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
        one = _best(largest[largest["threads"] == 1], verify)
        first = _fastest_first(most, verify)
        out.append({"workload": f"`{work}`", "dtype": dtype,
                    "size": f"{int(best['length'])} x {int(best['d_model'])}",
                    "bound": best.get("roof_bound", "memory"), "best (passes verify)": best["impl"],
                    "grade": grade(verify, best["impl"], dtype) or "-",
                    **({} if paired is None else {
                        f"x roof, {fmt.threads(int(best['threads']))}, paired": _paired(
                            of(paired, MEASURES[0]), work, dtype, best["impl"])}),
                    f"x roof, {fmt.threads(int(best['threads']))}"
                    + (", sweep" if paired is not None else ""): fmt.ratio(best["roof_ratio"]),
                    "x roof, 1 thread": _at_one_thread(one, best),
                    "fastest first call": "-" if first is None else first["impl"],
                    "first call x fresh fill": ("-" if first is None
                                                else fmt.ratio(first_call_ratio(bench, first))),
                    **({} if paired is None else {"first call x fresh fill, paired": _paired(
                        of(paired, MEASURES[1]), work, dtype,
                        "" if first is None else first["impl"])})})
    return pd.DataFrame(out)


def _paired(paired: pd.DataFrame, work: str, dtype: str, best: str) -> str:
    """The lowest ratio timed in alternating rounds for this output (of the sweep's pick `best`
    and its runner-up, named when it is the runner-up), or why there is none."""
    mine = paired[(paired["workload"] == work) & (paired["dtype"] == dtype)]
    ok = mine[mine["status"] == "ok"].sort_values("ratio")
    if ok.empty:
        return "-" if mine.empty else str(mine["status"].iloc[0])
    flags = ok["flags"] if "flags" in ok else pd.Series("", index=ok.index)
    flagged = flags.fillna("").astype(str) != ""
    top = ok[~flagged].iloc[0] if (~flagged).any() else ok.iloc[0]
    ratio = f"{fmt.ratio(top['ratio'])} ({top['ratio_p25']:.2f}-{top['ratio_p75']:.2f})"
    ratio += f" {top['impl']}" if top["impl"] != best else ""
    return ratio + (", under load" if flagged.all() else "")


def _at_one_thread(one: Optional[pd.Series], best: pd.Series) -> str:
    """The best that passes at one thread, named where it is not the all-thread pick: a pick
    writing fresh memory can be 5x the roof at one thread, where a recycled variant is not."""
    if one is None:
        return "-"
    ratio = fmt.ratio(one["roof_ratio"])
    return ratio if one["impl"] == best["impl"] else f"{ratio} ({one['impl']})"


def section(bench: pd.DataFrame, verify: Optional[pd.DataFrame],
            paired: Optional[pd.DataFrame] = None) -> str:
    frame = table(bench, verify, paired)
    if frame.empty:
        return ""
    return markdown.join(
        markdown.heading(2, "Roofs: what bounds each workload"),
        "At the largest size of each workload and dtype: which limit binds (*memory*: the fastest "
        "bare write of the same bytes, or for `forward` and `apply` the bare read-modify-write "
        "pass; *compute*: the same count of float32 sines and cosines through NumPy's or torch's "
        "vector math), and the fastest implementation that passes verify as a multiple of it "
        "(1x: at the limit; below 1x: faster than the bare operation it is measured against), "
        "and the best at one thread (named when it is not the same implementation). "
        + ("*Paired*: after the sweep, that implementation (and a runner-up within 1.5x of it, "
           "and its sibling writing into recycled or fresh memory) "
           "and the two fastest roofs timed again in one process, a round each in turn, so "
           "that a change of the machine's memory bandwidth between two sweep cells minutes "
           "apart cannot move the ratio: the median over rounds of its time over the fastest "
           "roof's in the same round, with the middle half of the rounds' ratios in "
           "parentheses (the runner-up named where it came out ahead; paired.csv has every "
           "row). *Sweep*: the same ratio from the sweep's medians. The first calls are paired "
           "the same way: each round a fresh build's first call of the two fastest, against "
           "the first calls of the two fastest allocate-and-fill roofs. " if paired is not None
           else "A default bench (not `--quick`) also times each of these against its roof in "
           "alternating rounds, a steadier ratio: `python -m harness roofs RUN_DIR`. ")
        + "*Grade*: the contract the best met on every verify case (`exact`: a few ulps of its "
        "dtype everywhere; `float32`: angles as if formed in float32). "
        "*Fastest first call*: of the implementations that pass verify and build into fresh "
        "memory (not in place), the fastest one-off first call, over the first call of the "
        "fastest roof that allocates fresh memory (`np.empty` or the framework's empty, then a "
        "fill, `x + pe` or `q * 2`); one call each, so noisier than the medians. Below glibc's "
        "mmap threshold (32 MiB) malloc may hand either one memory freed before.",
        markdown.table(frame, index=False))
