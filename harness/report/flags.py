"""The report's word on cells it could not trust: timings flagged for load, and invalid cells.

`section(run)` is one markdown section. A flagged cell (harness.bench.contention:
other processes kept busy the cores its threads needed, or it ran far slower at
more threads than at one) keeps its row in the tables, but the Recommendation
and the `--compare` gate leave it out; this section counts them, says which
recommendations they would have changed, and lists them. An `invalid` cell
(harness.bench.validity: its result was not a fresh, finite table of the right
shape and dtype, or its callable keeps a table after setup: a lookup) was not
timed, and its implementation is never recommended.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pandas as pd

from harness.report import fmt, markdown
from harness.report.load import Run
from harness.report.measures import timed
from harness.report.recommend import Recommendation, recommend, regime_of
from harness.runs.flags import (LOAD_MARGIN, LOOKUP, THREAD_SLOWDOWN, WAITED_MIN, flagged,
                                 why_flagged)
from harness.util import units

MAX_LISTED = 40
TITLE = "Flagged and invalid cells"


def section(run: Run, bench: Optional[pd.DataFrame] = None,
            picks: Optional[Sequence[Recommendation]] = None) -> str:
    """Markdown for report.md: flagged timings, the recommendations they touch, invalid cells.
    Cells are counted and listed over the whole run, as the report's top and bench's console
    count them; `bench`: the rows the Recommendation was made from, when narrower than
    `run.bench` (the recommendations the flagged cells would have changed are of those);
    `picks`: that Recommendation, when the caller has it (recommend(bench, run.verify))."""
    frame = run.bench if bench is None else bench
    rows = timed(run.bench)
    marked = rows[flagged(rows) & rows["ok"]]
    invalid = rows[rows["status"] == "invalid"]
    blocks = [markdown.heading(2, TITLE), _rules()]
    if not _load_recorded(rows) and invalid.empty:
        return markdown.join(*blocks, "This run recorded no load around its cells (it predates "
                             "load tracking): only the thread rule could flag its timings, and "
                             + ("it flagged none." if marked.empty else
                                f"it flagged {_cells(len(marked))} (listed in bench.csv)."))
    if marked.empty and invalid.empty:
        blocks.append(f"None: every timed cell ran with the cores it needed, no cell was over "
                      f"{THREAD_SLOWDOWN:g}x slower at more threads than at one, and every "
                      "result was a fresh, finite table of the right shape and dtype.")
        return markdown.join(*blocks)
    if not marked.empty:
        blocks += _flagged(marked, int(rows["ok"].sum()), frame, run.verify, picks)
    if not invalid.empty:
        blocks += _invalid(invalid)
    return markdown.join(*blocks)


def _load_recorded(rows: pd.DataFrame) -> bool:
    return any(c in rows.columns and rows[c].notna().any() for c in ("others_busy", "load_after"))


def _rules() -> str:
    return ("A timing is **flagged** when other processes kept busy, on average, more than the "
            f"cores its threads left free plus {LOAD_MARGIN:g} (`others_busy` in bench.csv, "
            "measured from the cell's first call to its last round) and its threads did wait "
            f"for a CPU ({WAITED_MIN:g} of a core or more, `waited`; where neither was measured, "
            f"a 1-minute load average above the cores plus {LOAD_MARGIN:g}), or when it ran over "
            f"{THREAD_SLOWDOWN:g}x slower at N threads than at 1 (threads that wait for cores). "
            "A cell timed faster than half a fill of the same bytes in the same run is flagged "
            "implausible, and one whose worker's clock disagreed with bench's own over its "
            "timed rounds is flagged clock. "
            "Flagged cells stay in the tables above as measured, but not in the Recommendation "
            "and not in `report --compare` verdicts. A cell is **invalid** when its first result "
            "was not a finite table of the right shape and dtype, a second call returned the "
            "first (poisoned) buffer, or its callable keeps a table's worth of arrays after "
            "setup that grows with the table (a lookup); it was not timed, and its "
            "implementation is never recommended.")


def _flagged(marked: pd.DataFrame, ok: int, frame: pd.DataFrame,
             verify: Optional[pd.DataFrame],
             picks: Optional[Sequence[Recommendation]] = None) -> list[str]:
    why = why_flagged(marked)          # the words the console and the report's top use
    blocks = [f"**{_cells(len(marked))} of {ok} timed flagged** ({why}): rerun on a quieter "
              "machine to judge them."]
    clean = recommend(frame, verify) if picks is None else picks
    blocks += _changed(clean, recommend(_touched(frame), verify, include_flagged=True))
    listed = marked.assign(cell=_cell(marked)).sort_values(["workload", "impl", "elements"])
    table = pd.DataFrame({
        "workload": listed["workload"], "impl": listed["impl"], "cell": listed["cell"],
        "median": listed["median_s"].map(units.seconds),
        "others busy": _column(listed, "others_busy").map(_cores),
        "load avg": _column(listed, "load_after").map(_cores),
        "why": listed["flags"].astype(str) if "flags" in listed.columns else ""})
    blocks += [markdown.table(table.head(MAX_LISTED), index=False), _more(len(listed))]
    return blocks


def _touched(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows whose recommendation the flagged cells could change: those of a workload, size
    regime, dtype and device with a flagged timing (every thread count: a group's pick reads
    the others'), and every invalid row (it bars its implementation everywhere). Elsewhere the
    flagged-included recommendation is the clean one; making it for every group again was a
    fifth of the report's main-thread CPU."""
    rows = timed(frame)
    regimes = rows["elements"].map(lambda n: regime_of(int(n)).name)
    keys = pd.Series(list(zip(rows["workload"], regimes, rows["dtype"], rows["device"])),
                     index=rows.index)
    marked = set(keys[flagged(rows) & rows["ok"]])
    return rows[keys.isin(marked) | (rows["status"] == "invalid")]


def _changed(clean: Sequence[Recommendation], raw: Sequence[Recommendation]) -> list[str]:
    """The recommendations that the flagged cells would have changed, one line each."""
    def key(p: Recommendation) -> tuple:
        return (p.workload, p.regime.name, p.dtype, p.device, p.threads)

    kept = {key(p): p for p in clean}
    lines = []
    for p in raw:
        mine = kept.get(key(p))
        where = f"`{p.workload}` {p.regime.name} {p.dtype} {p.device} {fmt.threads(p.threads)}"
        if mine is None:
            lines.append(f"- {where}: no recommendation without the flagged cells "
                         f"(with them: {p.impl})")
        elif mine.impl != p.impl:
            lines.append(f"- {where}: **{mine.impl}**; with the flagged cells it would have been "
                         f"{p.impl}")
    if not lines:
        return ["No recommendation would change with the flagged cells included."]
    return ["Recommendations the flagged cells would have changed:", "\n".join(lines)]


def _invalid(invalid: pd.DataFrame) -> list[str]:
    lookups = int(invalid["reason"].astype(str).str.contains(LOOKUP, regex=False).sum())
    listed = invalid.assign(cell=_cell(invalid)).sort_values(["workload", "impl", "elements"])
    table = pd.DataFrame({"workload": listed["workload"], "impl": listed["impl"],
                          "cell": listed["cell"], "reason": listed["reason"].astype(str)})
    return [f"**{_cells(len(invalid))} invalid** ({lookups} lookup(s)), not timed; their "
            "implementations are never recommended:",
            markdown.table(table.head(MAX_LISTED), index=False), _more(len(listed))]


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        return pd.Series(float("nan"), index=frame.index)
    return pd.to_numeric(frame[name], errors="coerce")


def _cores(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:.2g}"


def _cell(rows: pd.DataFrame) -> pd.Series:
    size = rows["length"].astype(str) + "x" + rows["d_model"].astype(str)
    return (size + " " + rows["dtype"].astype(str) + " " + rows["threads"].map(fmt.threads)
            + rows["device"].map(lambda d: "" if d == "cpu" else f" {d}"))


def _cells(n: int) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _more(n: int) -> str:
    return f"... and {n - MAX_LISTED} more in bench.csv." if n > MAX_LISTED else ""
