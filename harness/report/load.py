"""Read one run directory (bench.csv or its journal, env.json, verify.csv, extras) into a `Run`.

Everything downstream works on the normalised frames built here, so a missing
optional column or a CSV boolean written as text is handled once, and bad
input (no directory, no rows, missing columns) is one clear ValueError. Which
of bench.csv and the journal to trust is harness.report.source's decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from harness.core.selection import matches
from harness.report import source
from harness.runs import journal
from harness.util.exitcodes import UsageError

#: Columns without which no report can be built.
REQUIRED = ("impl", "workload", "length", "d_model", "dtype", "threads", "median_s", "iqr_s", "status")
#: Optional columns and the value a row gets when the engine did not write them.
OPTIONAL: Mapping[str, Any] = {
    "run_id": "", "machine": "", "backend": "", "device": "cpu", "convention": "", "batch": 0,
    "reason": "", "mode": "", "kind": "table", "heads": 1,
    "roof_ratio": float("nan"), "roof_bound": "memory", "is_roof": False,
}
#: The one timing mode of device cells that the CPU-shaped sections show (what a user sees:
#: call + sync); every mode is in `Run.device` for the GPU section (harness.bench.modes).
PRIMARY_MODES = ("", "sync")


@dataclass(frozen=True, eq=False)
class Run:
    """One run directory: its timings, environment and (if present) its verify verdicts.

    `note` says why the timings came from the journal rather than bench.csv ('' when they did not).
    """

    path: Path
    env: Mapping[str, Any]
    bench: pd.DataFrame
    verify: Optional[pd.DataFrame]
    note: str = ""
    device: Optional[pd.DataFrame] = None     # device cells in every timing mode (None: no GPU)

    @property
    def machine(self) -> str:
        """What titles call the machine: its GPU first when it had one (runs recorded before
        env.json's label named the GPU get it here)."""
        host = str(self.env.get("machine") or _first(self.bench, "machine") or "unknown machine")
        gpu = self.env.get("gpu")
        return f"{gpu} ({host})" if gpu and str(gpu) not in host else host

    @property
    def run_id(self) -> str:
        return str(self.env.get("run_id") or _first(self.bench, "run_id") or self.path.name)

    @property
    def key(self) -> str:
        """Column label when runs are side by side: machine, then run id."""
        return f"{self.machine} ({self.run_id})"

    def extra(self, name: str) -> Optional[Path]:
        """An optional file written by another verb (conventions.md, plots/precision.png...)."""
        path = self.path / name
        return path if path.exists() else None


def load_run(path: Path | str, only: Sequence[str] = (), keep: Sequence[str] = ()) -> Run:
    """Load and normalise a run; `only` globs filter implementations (roofs and `keep` stay)."""
    path = Path(path)
    if not path.is_dir():
        raise UsageError(f"run directory {path} does not exist" if not path.exists()
                         else f"{path} is not a directory (a run directory holds bench.csv)")
    if not any((path / name).is_file() for name in (source.BENCH_CSV, source.JOURNAL)):
        raise UsageError(f"{path} has no bench.csv: not a run directory written by `harness bench`")
    env = load_env(path)
    rows = source.bench_rows(path, str(env.get("run_id") or path.name), str(env.get("machine") or ""))
    bench = _normalise_bench(rows.frame, rows.source)
    bench["samples_s"] = _rounds(path, bench)
    if only:
        wanted = bench["impl"].map(lambda n: n in keep or matches(n, only))
        bench = bench[wanted | bench["is_roof"]].reset_index(drop=True)
    verify_csv = path / "verify.csv"
    verify = _normalise_verify(_read_csv(verify_csv), verify_csv) if verify_csv.is_file() else None
    device = bench[bench["mode"] != ""].reset_index(drop=True)
    primary = bench[bench["mode"].isin(PRIMARY_MODES)].reset_index(drop=True)
    return Run(path, env, primary, verify, rows.note, device if len(device) else None)


def load_env(path: Path | str) -> dict[str, Any]:
    """A run's env.json ({} when it has none)."""
    env_json = Path(path) / "env.json"
    return _read_json(env_json) if env_json.is_file() else {}


def _rounds(path: Path, bench: pd.DataFrame) -> list[tuple[float, ...]]:
    """Each row's raw rounds from the journal (the compare gate's test), () where none."""
    found = journal.rounds(path / source.JOURNAL)
    keys = bench["key"] if "key" in bench.columns else pd.Series("", index=bench.index)
    return [found.get(str(k), ()) for k in keys]


def newest_run(root: Path | str) -> Path:
    """The run directory under `root` whose bench.csv or journal was written last."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"results directory {root} does not exist")
    written = [p for name in (source.BENCH_CSV, source.JOURNAL) for p in root.glob(f"*/{name}")]
    if not written:
        raise UsageError(f"no run directory (a folder with bench.csv) under {root}")
    return max(written, key=lambda p: p.stat().st_mtime).parent


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a text CSV (binary data)") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise UsageError(f"{path} is not a readable CSV: {str(exc).strip()}") from None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None


def _normalise_bench(frame: pd.DataFrame, origin: Path) -> pd.DataFrame:
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise UsageError(f"{origin} lacks column(s) {', '.join(missing)}")
    frame = frame.copy()
    for column, default in OPTIONAL.items():
        if column not in frame.columns:
            frame[column] = default
        frame[column] = frame[column].fillna(default)
    frame["is_roof"] = frame["is_roof"].map(_truthy).astype(bool)
    frame["mode"] = frame["mode"].astype(str)
    frame["kind"] = frame["kind"].astype(str).replace("", "table")   # rows from before kinds
    for column in ("length", "d_model", "threads", "batch", "heads"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0).astype(int)
    for column in ("median_s", "iqr_s", "roof_ratio"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["elements"] = frame["length"] * frame["d_model"]
    frame["size"] = frame["length"].astype(str) + "x" + frame["d_model"].astype(str)
    frame["ok"] = (frame["status"] == "ok") & (frame["median_s"] > 0)
    return frame


def _normalise_verify(frame: pd.DataFrame, origin: Path) -> pd.DataFrame:
    missing = [c for c in ("impl", "dtype", "max_abs_err", "status") if c not in frame.columns]
    if missing:
        raise UsageError(f"{origin} lacks column(s) {', '.join(missing)}")
    frame = frame.copy()
    frame["kind"] = frame["kind"].fillna("table") if "kind" in frame else "table"
    frame["max_abs_err"] = pd.to_numeric(frame["max_abs_err"], errors="coerce")
    # the last position a case reaches (a grid or a timestep embedding has no offset)
    for column in ("length", "offset"):
        values = frame[column] if column in frame else pd.Series(0, index=frame.index)
        frame[column] = pd.to_numeric(values, errors="coerce").fillna(0).astype(int)
    frame["max_position"] = frame["offset"] + frame["length"] - 1
    frame.loc[frame["length"] <= 0, "max_position"] = 0     # no positions: a timestep embedding
    return frame


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _first(frame: pd.DataFrame, column: str) -> Optional[str]:
    values = [v for v in frame.get(column, pd.Series(dtype=object)) if isinstance(v, str) and v]
    return values[0] if values else None
