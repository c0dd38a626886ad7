"""Implementation x size pivots of one (workload, dtype, threads) group, cells formatted.

Rows are ordered by overall speed (the mean log ratio to the fastest in each
cell), so the table reads top-down from fastest to slowest; columns by size.
A cell that did not run shows its status (error, timeout, skip) instead.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from harness.report import fmt
from harness.report.measures import noisy, speedup
from harness.util import units

NOISY_MARK = "*"


def speed_order(rows: pd.DataFrame) -> list[str]:
    """Implementations fastest first: mean over cells of log(median / fastest median there)."""
    ok = rows[rows["ok"]]
    best = ok.groupby("size")["median_s"].transform("min")
    score = np.log(ok["median_s"] / best).groupby(ok["impl"]).mean()
    never = sorted(set(rows["impl"]) - set(score.index))
    return list(score.sort_values(kind="stable").index) + never


def pivot(rows: pd.DataFrame, values: pd.Series, order: list[str] | None = None,
          fill: object = "") -> pd.DataFrame:
    """`values` (aligned with `rows`) laid out as impl x size; sizes by elements, then length."""
    laid = rows.assign(_value=values).pivot_table(index="impl", columns="size", values="_value",
                                                  aggfunc="first", dropna=False)
    sizes = rows.drop_duplicates("size").sort_values(["elements", "length"])["size"]
    laid = laid.reindex(index=order or sorted(laid.index), columns=list(sizes)).fillna(fill)
    laid.index.name, laid.columns.name = "impl", None
    return laid


def _cells(rows: pd.DataFrame, values: pd.Series, show: Callable[[float], str]) -> pd.Series:
    """Formatted value for ok rows, the status word otherwise."""
    return pd.Series([show(v) if ok else status
                      for v, ok, status in zip(values, rows["ok"], rows["status"])], index=rows.index)


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Median time per cell with units; noisy cells (IQR/median > 10%) marked."""
    marks = noisy(rows).map(lambda flag: NOISY_MARK if flag else "")
    text = _cells(rows, rows["median_s"], units.seconds) + marks.where(rows["ok"], "")
    return pivot(rows, text, speed_order(rows))


def speedups(rows: pd.DataFrame, all_rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """baseline / impl per cell (> 1: faster than the baseline); `all_rows` holds the baseline."""
    ratio = speedup(all_rows, baseline).loc[rows.index]
    return pivot(rows, _cells(rows, ratio, fmt.ratio), speed_order(rows))


def roof_ratios(rows: pd.DataFrame) -> pd.DataFrame:
    """median / roof (fastest bare fill, or x + y, of the same bytes, same run): 1x is the limit."""
    rows = rows[~rows["is_roof"]]
    return pivot(rows, _cells(rows, rows["roof_ratio"], fmt.ratio), speed_order(rows))


def changes(rows: pd.DataFrame) -> pd.DataFrame:
    """Change of the median vs a base run: bold where slower beyond the noise between the runs
    (the compare gate's bar), a dagger where the gate does not judge the cell."""
    text = pd.Series([f"**{fmt.pct(p)}**" if beyond else fmt.pct(p) + ("" if judged else " †")
                      for p, beyond, judged in zip(rows["pct"], rows["beyond_noise"],
                                                   rows["judged"])], index=rows.index)
    return pivot(rows, text)
