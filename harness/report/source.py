"""Which rows a report may trust: bench.csv, or the journal it is derived from.

`bench` writes every finished cell to the journal (cells.jsonl) at once and
rewrites bench.csv from it only between worker groups, so after a kill bench.csv
can hold a fraction of the run, and a file copied or edited by hand can be
header-only or cut mid-line. The journal is the truth: when it holds cells
that bench.csv lacks or records differently, the rows are rebuilt from it
(with harness.runs.results.tidy, the engine's own derivation); without a
journal, a bench.csv that is empty or damaged is refused, so that a good
report.md is never replaced by an empty one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.runs import journal, results
from harness.util.exitcodes import UsageError

BENCH_CSV = results.FILENAME
JOURNAL = journal.FILENAME
#: Columns a row cannot lack: without them a cell has no identity or no outcome.
IDENTITY = ("impl", "workload", "length", "d_model", "dtype", "threads", "status")
#: Columns `tidy` derives itself (a journal row never has them).
DERIVED = ("run_id", "machine", "gbps", "roof_s", "roof_ratio", "roof_bound")


@dataclass(frozen=True)
class Rows:
    """The raw bench rows of a run, where they came from, and why (empty when bench.csv as is)."""

    frame: pd.DataFrame
    source: Path
    note: str = ""


def bench_rows(run_dir: Path, run_id: str, machine: str) -> Rows:
    """The rows to report: bench.csv when it agrees with the journal, else the journal's.

    `run_id` and `machine` label rows rebuilt from the journal (which does not
    record them). Raises ValueError, naming the file, when neither source has a row.
    """
    csv_path, journal_path = run_dir / BENCH_CSV, run_dir / JOURNAL
    csv, problem = _read_csv(csv_path)
    logged = journal.read_all(journal_path)
    if not logged:
        if csv is None:
            raise UsageError(f"{csv_path}: {problem}, and no journal ({JOURNAL}) with rows to "
                             "rebuild it from; report.md left as it was")
        return Rows(csv, csv_path)
    rebuilt = _from_journal(logged, run_id, machine, journal_path)
    if csv is None:
        why = problem
    else:
        extra = _unknown_to_journal(csv, rebuilt)
        if extra:   # bench.csv knows cells the journal does not: neither can be trusted blindly
            raise UsageError(f"{csv_path} has {_cells(len(extra))} that {journal_path} lacks "
                             f"(e.g. {sorted(extra)[0]}); move away the one you do not trust")
        why = _staleness(csv, rebuilt)
        if why is None:
            return Rows(csv, csv_path)
    return Rows(rebuilt, journal_path,
                f"{csv_path}: {why}; rows rebuilt from {JOURNAL} ({_cells(len(rebuilt))})")


def _read_csv(path: Path) -> tuple[pd.DataFrame | None, str]:
    """(rows, "") or (None, what is wrong with the file)."""
    if not path.is_file():
        return None, "no such file"
    data = path.read_bytes()
    if not data.strip():
        return None, "empty file"
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except UnicodeDecodeError:
        return None, "not a text CSV (binary data)"
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        return None, f"not a readable CSV ({str(exc).strip()})"
    missing = [c for c in IDENTITY if c not in frame.columns]
    if missing:
        return None, f"lacks column(s) {', '.join(missing)}"
    if frame.empty:
        return None, "header only, no rows"
    if not data.endswith(b"\n"):
        return None, f"line {len(frame) + 1}, the last, is cut off (truncated file?)"
    broken = _incomplete(frame)
    if broken:
        return None, f"line(s) {broken} lack {'/'.join(IDENTITY)} (truncated or hand-edited?)"
    return frame, ""


def _incomplete(frame: pd.DataFrame) -> str:
    """File line numbers (header = 1) of rows missing an identity field, '' when none."""
    bad = frame[list(IDENTITY)].isna().any(axis=1)
    lines = [str(i + 2) for i in np.flatnonzero(bad.to_numpy())]
    return ", ".join(lines[:5]) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def _from_journal(logged: list[dict[str, Any]], run_id: str, machine: str,
                  path: Path) -> pd.DataFrame:
    """bench.csv's table, derived from the journal as the bench engine derives it."""
    defaults: dict[str, Any] = {c: math.nan for c in results.COLUMNS if c not in DERIVED}
    defaults.update(is_roof=False, reason="")   # rows of an older journal may lack a column
    frame = results.tidy([{**defaults, **row} for row in logged], run_id, machine)
    broken = _incomplete(frame)
    if broken:
        raise UsageError(f"{path}: row(s) {broken} lack {'/'.join(IDENTITY)}: not a journal "
                         "written by `harness bench`")
    return frame


def _unknown_to_journal(csv: pd.DataFrame, rebuilt: pd.DataFrame) -> set[str]:
    """Keys of cells in bench.csv that the journal never recorded."""
    if "key" not in csv.columns:
        return set()
    return set(csv["key"].astype(str)) - set(rebuilt["key"])


def _staleness(csv: pd.DataFrame, rebuilt: pd.DataFrame) -> str | None:
    """Why bench.csv is behind the journal (None: they record the same cells the same way)."""
    if "key" not in csv.columns:
        return "has no key column, so it cannot be checked against the journal"
    mine, truth = csv.drop_duplicates("key", keep="last"), rebuilt
    missing = len(set(truth["key"]) - set(mine["key"]))
    if missing:
        return f"stale: {_cells(len(mine))} where {JOURNAL} has {len(truth)}"
    both = truth[["key", "status", "median_s"]].merge(
        mine[["key", "status", "median_s"]], on="key", suffixes=("_log", "_csv"))
    new = pd.to_numeric(both["median_s_log"], errors="coerce").to_numpy(float)
    old = pd.to_numeric(both["median_s_csv"], errors="coerce").to_numpy(float)
    same_time = np.isclose(new, old, rtol=1e-9, atol=0.0, equal_nan=True)
    changed = int(((both["status_log"] != both["status_csv"]).to_numpy() | ~same_time).sum())
    if changed:
        return f"stale: {_cells(changed)} recorded differently in {JOURNAL} (a later run of them)"
    return None


def _cells(n: int) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")
