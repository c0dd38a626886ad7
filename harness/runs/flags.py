"""When a timing cannot be trusted: the flags a row gets from its load columns and its
siblings (harness.bench.contention measures the load; bench and report both judge by
these rules, so they live with the run directory's other formats).

These rules flag a timed cell (`flags`; `""` when clean). Flagged cells keep their
row, but are left out of recommendations and of `report --compare` verdicts:

- **load**: `others_busy > cores - needed + LOAD_MARGIN` (other processes took
  cores the cell's threads needed, for more than half a core on average), where `needed`
  is the cell's thread count, or fewer when fewer of its worker's threads ran
  (`threads_ran`: NumPy timed "at 2 threads" runs on one, and beside one busy core of two it
  had a core to itself), and its threads did wait for a CPU (`waited` at least
  WAITED_MIN cores: `others_busy` counts in 10 ms ticks, noise over a short cell's window,
  while a thread's run delay is exact); where `others_busy` was not measured, a load
  average above `cores + LOAD_MARGIN`;
- **threads**: an N-thread cell more than `THREAD_SLOWDOWN` (4) times slower
  than the same cell at 1 thread in the same run: more threads can fail to
  help, but not by that much unless they waited for cores;
- **implausible**: faster than IMPLAUSIBLE_SHARE of a fill of the same bytes timed in the
  same run (harness.bench.roofs, fresh or recycled memory): no call can write its output
  faster than memory takes it, so the timing is not of the work (nothing written, a lazy
  result, a faked clock);
- **clock**: the worker's timer disagreed with the wall time the supervisor measured over the
  same timed rounds (harness.bench.supervisor): the rounds' times are not to be believed;
- **inputs**: a workload with inputs (a forward's x, an apply's q and k) whose result did not
  follow them when they were negated in place after the timed rounds (harness.bench.fingerprint):
  it computed its answer, or copied its inputs, at build time, so its timing may be of a copy.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import pandas as pd

from harness.runs.identity import SIBLING

#: Cores other processes may keep busy beyond those the cell leaves free before it is flagged.
LOAD_MARGIN = 0.5
#: Cores' worth of a cell's threads waiting, ready, for a CPU below which other processes did
#: not take the cores it needed, whatever `others_busy` reads (harness.bench.contention).
WAITED_MIN = 0.05
#: An N-thread median this many times its 1-thread median is flagged.
THREAD_SLOWDOWN = 4.0
EXCLUDED = "kept out of recommendations and compare verdicts"
#: The reason of an `invalid` row whose callable keeps its table (harness.bench.validity).
LOOKUP = "a lookup, not a table build"
#: A cell timed below this share of a fill of the same bytes in the same run (fresh or recycled
#: memory, the fastest) did not write its output, or its clock lies: implausible.
IMPLAUSIBLE_SHARE = 0.5


# -- the flags -------------------------------------------------------------------------

def load_flag(row: Mapping[str, Any]) -> str:
    """'load: ...' when other processes held cores this row's threads needed, else ''."""
    cores, threads = _number(row.get("cores")), _number(row.get("threads"))
    if not cores or cores <= 0 or not threads:
        return ""
    others = _number(row.get("others_busy"))
    if others is not None:
        free = max(cores - needed(row), 0)
        waited = _number(row.get("waited"))
        if others > free + LOAD_MARGIN and (waited is None or waited >= WAITED_MIN):
            used = f"{threads:g} thread" + ("" if threads == 1 else "s")
            if needed(row) < threads:
                used += f" of which {needed(row):g} ran"
            waits = f"; its threads waited {waited:.2g} of a core" if waited is not None else ""
            return (f"load: {_cores(f'{others:.2g}')} busy with other processes "
                    f"({_cores(f'{cores:g}')}, {used}, > {free + LOAD_MARGIN:g}{waits})")
        return ""
    loads = [v for v in (_number(row.get("load_before")), _number(row.get("load_after")))
             if v is not None]
    if loads and max(loads) > cores + LOAD_MARGIN:
        return f"load: load average {max(loads):.2g} on {cores:g} cores (> {cores + LOAD_MARGIN:g})"
    return ""


def needed(row: Mapping[str, Any]) -> float:
    """The cores a row's work needed: its threads, or fewer where fewer of them ran."""
    threads = _number(row.get("threads")) or 1.0
    ran = _number(row.get("threads_ran"))
    return min(threads, ran) if ran is not None and ran >= 1 else threads


def thread_flag(median_s: float, threads: int, one_thread_s: Optional[float]) -> str:
    """'threads: ...' when an N-thread median is over THREAD_SLOWDOWN x its 1-thread one."""
    if threads <= 1 or one_thread_s is None or not one_thread_s > 0 or not median_s > 0:
        return ""
    ratio = median_s / one_thread_s
    if ratio > THREAD_SLOWDOWN:
        times = f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3g}"
        return f"threads: {times}x slower at {threads} threads than at 1 (> {THREAD_SLOWDOWN:g}x)"
    return ""


def implausible_flag(median_s: float, fill_s: float) -> str:
    """'implausible: ...' when a cell's median is below IMPLAUSIBLE_SHARE of the fastest fill
    of the same bytes in the same run (the physical floor of writing its output), else ''."""
    if not (median_s > 0 and fill_s > 0) or median_s >= IMPLAUSIBLE_SHARE * fill_s:
        return ""
    return (f"implausible: {fill_s / median_s:.3g}x faster than a fill of the same bytes in this "
            f"run (below {IMPLAUSIBLE_SHARE:g}x the memory roof: not writing its output, or a "
            "clock that lies)")


def with_implausible(frame: pd.DataFrame, fill_s: pd.Series) -> pd.Series:
    """`frame`'s flags, with the implausible flag added to the implementation cells timed ok
    below the floor `fill_s` (per row; NaN where no fill was timed)."""
    out = frame["flags"].fillna("").astype(str).copy()
    ok = _timed_ok(frame)
    medians = pd.to_numeric(frame["median_s"], errors="coerce")
    for index in frame.index[ok]:
        found = implausible_flag(float(medians[index]), float(fill_s[index]))
        if found:
            out[index] = "; ".join(f for f in (out[index], found) if f)
    return out


def flags(frame: pd.DataFrame) -> pd.Series:
    """The flags of every row timed ok ('; '-joined, '' when none); other rows get ''."""
    out = pd.Series("", index=frame.index, dtype=object)
    if frame.empty:
        return out
    ok = _ok(frame)
    keys = _sibling_keys(frame)
    medians = pd.to_numeric(frame["median_s"], errors="coerce")
    threads = pd.to_numeric(frame["threads"], errors="coerce").fillna(1).astype(int)
    one_thread = {keys[i]: float(medians[i]) for i in frame.index[ok & (threads == 1)]}
    wanted = ["cores", "threads", "threads_ran", "waited", "others_busy", "load_before",
              "load_after", "clock", "inputs"]
    rows = frame.reindex(columns=wanted).loc[ok].to_dict("index")
    for index, row in rows.items():
        found = [load_flag(row), thread_flag(float(medians[index]), int(threads[index]),
                                             one_thread.get(keys[index])),
                 row["clock"] if isinstance(row.get("clock"), str) else "",
                 row["inputs"] if isinstance(row.get("inputs"), str) else ""]
        out[index] = "; ".join(f for f in found if f)
    return out


def flagged(frame: pd.DataFrame) -> pd.Series:
    """True for rows with a flag: the `flags` column where the run has one, else worked out
    from the rows (runs written before flags existed get the thread rule)."""
    column = frame["flags"] if "flags" in frame.columns else flags(frame)
    return column.fillna("").astype(str).str.len() > 0


def kinds(frame: pd.DataFrame) -> dict[str, int]:
    """How many flagged rows each rule caught: {'load': n, 'threads': m} (a row may have both)."""
    column = frame["flags"] if "flags" in frame.columns else flags(frame)
    text = column.fillna("").astype(str)
    return {kind: int(text.str.contains(f"(?:^|; ){kind}:", regex=True).sum())
            for kind in KINDS}


#: Every rule's name, as each flag starts.
KINDS = ("load", "threads", "implausible", "clock", "inputs")


def summary(frame: pd.DataFrame) -> str:
    """One console line: how many timed cells were flagged and why (implementation cells, as
    every count of flagged cells the console and the report give; flagged roofs after them)."""
    mine, roofs = _timed_ok(frame), _timed_ok(frame, roofs=True)
    marked = flagged(frame) & mine
    roof_note = _roofs_flagged(frame, roofs)
    if not marked.any():
        return (f"bench: no cell flagged for load (of {int(mine.sum())} timed ok): none ran with "
                f"other processes on the cores it needed, none slower at more threads than "
                f"{THREAD_SLOWDOWN:g}x its 1-thread time" + roof_note)
    counts = kinds(frame[marked])
    why = []
    if counts["load"]:
        why.append(f"{counts['load']} under load (other processes busy on more than the free "
                   f"cores + {LOAD_MARGIN:g})")
    if counts["threads"]:
        why.append(f"{counts['threads']} slower with more threads than {THREAD_SLOWDOWN:g}x "
                   "their 1-thread time")
    if counts["implausible"]:
        why.append(f"{counts['implausible']} faster than a fill of the same bytes allows")
    if counts["clock"]:
        why.append(f"{counts['clock']} whose worker's clock disagreed with bench's own")
    if counts["inputs"]:
        why.append(f"{counts['inputs']} whose result did not follow its inputs")
    return (f"bench: {int(marked.sum())} of {int(mine.sum())} timed cells flagged, {EXCLUDED}: "
            + ", ".join(why) + " (`flags` in bench.csv)" + roof_note)


def _roofs_flagged(frame: pd.DataFrame, roofs: pd.Series) -> str:
    marked = int((flagged(frame) & roofs).sum()) if roofs.any() else 0
    return f"; and {marked} of {int(roofs.sum())} roof cells" if marked else ""


def flagged_count(frame: pd.DataFrame) -> tuple[int, int]:
    """(flagged, timed ok) among the implementation cells (roofs aside): the count bench's last
    lines and the report's first both give."""
    if frame.empty:
        return 0, 0
    ok = _timed_ok(frame)
    return int((flagged(frame) & ok).sum()), int(ok.sum())


def why_flagged(frame: pd.DataFrame) -> str:
    """Short: how many of the implementation cells each rule flagged ('3 under load, 1 slower
    with more threads'), for the lines that give flagged_count."""
    if frame.empty:
        return ""
    counts = kinds(frame[flagged(frame) & _timed_ok(frame)])
    return ", ".join(f"{n} {SHORT[kind]}" for kind, n in counts.items() if n)


def answered_at_fewer(frame: pd.DataFrame) -> str:
    """Of the implementation cells flagged for load, those whose same cell at fewer threads is
    timed ok and unflagged (harness.bench.remeasure's fallback), in words for the lines that give
    flagged_count ('' when none): those cells still have an answer, at fewer threads."""
    if frame.empty:
        return ""
    column = frame["flags"] if "flags" in frame.columns else flags(frame)
    ok, marked = _timed_ok(frame), flagged(frame)
    loaded = column.fillna("").astype(str).str.contains("(?:^|; )load:", regex=True)
    keys = _sibling_keys(frame)
    threads = pd.to_numeric(frame["threads"], errors="coerce").fillna(1)
    fewest = threads[ok & ~marked].groupby(keys[ok & ~marked]).min()
    lost = frame.index[ok & loaded]
    count = sum(1 for i in lost if fewest.get(keys[i], threads[i]) < threads[i])
    return f"{count} of them answered at fewer threads instead" if count else ""


#: Each rule's few words, for why_flagged.
SHORT = {"load": "under load", "threads": "slower with more threads",
         "implausible": "faster than a fill (implausible)", "clock": "with a disagreeing clock",
         "inputs": "not following their inputs"}


def what_to_do(run_dir: str) -> str:
    """The one thing to do about cells that stayed flagged."""
    return (f"to measure them again when the machine is quieter: python -m harness bench "
            f"--resume {run_dir}")


class Running:
    """Flags of rows as they arrive (for the progress lines): remembers 1-thread medians."""

    def __init__(self) -> None:
        self.one_thread: dict[tuple, float] = {}

    def flag(self, row: Mapping[str, Any]) -> str:
        if row.get("status") != "ok" or not _number(row.get("median_s")):
            return ""
        key = tuple(row.get(k, "") or "" for k in SIBLING)
        threads = int(row.get("threads") or 1)
        if threads == 1:
            self.one_thread[key] = float(row["median_s"])
        found = [load_flag(row), thread_flag(float(row["median_s"]), threads,
                                             self.one_thread.get(key))]
        return "; ".join(f for f in found if f)


def _ok(frame: pd.DataFrame) -> pd.Series:
    median = pd.to_numeric(frame["median_s"], errors="coerce")
    return (frame["status"] == "ok") & (median > 0)


def _timed_ok(frame: pd.DataFrame, roofs: bool = False) -> pd.Series:
    """Rows timed ok: the implementations' (a frame without `is_roof` has no roofs), or the
    roofs'."""
    roof = (frame["is_roof"].astype(str).str.lower().isin(("true", "1")) if "is_roof" in frame
            else pd.Series(False, index=frame.index))
    return _ok(frame) & (roof if roofs else ~roof)


def _sibling_keys(frame: pd.DataFrame) -> pd.Series:
    parts = [frame[k].fillna("").astype(str) if k in frame.columns
             else pd.Series("", index=frame.index) for k in SIBLING]
    return pd.Series(list(zip(*parts)), index=frame.index)


def _cores(count: str) -> str:
    return f"{count} core" + ("" if count == "1" else "s")


def _number(value: Any) -> Optional[float]:
    """A finite float, or None (missing, NaN, text)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
