"""From journal rows to the tidy `bench.csv`: one row per cell, derived columns added.

`gbps` is output bytes per second of the median call. `roof_s` is the binding
roof for the same output in the same run (same workload, shape, dtype, threads, device, batch
and timing mode): the fastest way to meet each limit (memory: a fill, or a bare x + pe, into
fresh or recycled memory; compute: the same count of float32 sines and cosines through vector
math; harness.bench.roofs), and of those the slowest, named in `roof_bound`; `roof_ratio` =
median_s / roof_s, so 1 means "as fast as the limit allows". `flags` says why
a timing may be distorted by other processes (harness.bench.contention: load,
or far slower at more threads than at one); a flagged roof is no yardstick.
`first_call` says whether `first_call_s` found the implementation's caches
`cold` (its first call in a fresh worker), `warm`, or `shared` (a JIT backend's
worker where other implementations ran first; harness.bench.worker).
`status` `invalid`: the cell's result or callable failed bench's checks
(harness.bench.validity), and it was not timed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from harness.runs import flags as flag_rules
from harness.runs.identity import OUTPUT
from harness.util import io

FILENAME = "bench.csv"
#: The report's short answer, one line per workload, that bench prints at its end.
ANSWER = "answer.txt"
#: The names of compute roofs (harness.bench.roofs: vector sin/cos) start so; the rest are memory roofs.
COMPUTE_ROOF = "roof-sincos"
#: A roof stands beside the cells that write the same bytes in the same way (bytes_out tells a
#: grid's cls rows and a rotary apply's heads apart).
ROOF_KEYS = [*OUTPUT, "bytes_out"]
COLUMNS = [
    "run_id", "machine", "impl", "backend", "device", "kind", "workload", "convention", "length",
    "d_model", "dtype", "threads", "batch", "heads", "mode", "median_s", "iqr_s", "min_s", "mean_s",
    "stddev_s", "rounds", "build_s", "first_call_s", "first_call", "peak_bytes", "peak_method",
    "bytes_out", "gbps", "roof_s", "roof_ratio", "roof_bound", "status", "reason", "flags",
    "retains_bytes", "load_before", "load_after", "others_busy", "cores", "threads_ran",
    "waited", "thread_settings", "is_roof", "attempts", "key",
]
#: Columns a journal written before them lacks (NaN there).
LATER = ("retains_bytes", "load_before", "load_after", "others_busy", "cores", "threads_ran",
         "waited")


def tidy(rows: Sequence[dict[str, Any]], run_id: str, machine: str) -> pd.DataFrame:
    """The bench.csv table; a cell recorded more than once (measured again because its timing
    was flagged: harness.bench.remeasure) keeps its last row timed ok, else its last row, and
    counts its `attempts`."""
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = newest(pd.DataFrame(list(rows)))
    df["mode"] = df["mode"].fillna("") if "mode" in df else ""   # journals before modes had none
    for column, before in (("kind", "table"), ("heads", 1), ("first_call", "")):  # nor before kinds
        df[column] = df[column].fillna(before) if column in df else before
    for column in LATER:
        if column not in df:
            df[column] = float("nan")
    df["run_id"], df["machine"] = run_id, machine
    df["gbps"] = df["bytes_out"] / df["median_s"] / 1e9
    df["flags"] = flag_rules.flags(df)
    yardsticks = roofs(df)      # rows that already carry them (a bench.csv read back) get new ones
    df = df.drop(columns=["roof_s", "roof_bound"], errors="ignore")
    df = df.merge(yardsticks, how="left", on=ROOF_KEYS)
    df["roof_ratio"] = df["median_s"] / df["roof_s"]
    df["flags"] = flag_rules.with_implausible(df, df.merge(fills(df), how="left", on=ROOF_KEYS)
                                              ["fill_s"].set_axis(df.index))
    return df[COLUMNS]


def roof_bound(impl: str) -> str:
    """Which limit a roof measures: "compute" (vector sin/cos) or "memory" (a fill or a pass)."""
    return "compute" if str(impl).startswith(COMPUTE_ROOF) else "memory"


def roofs(df: pd.DataFrame) -> pd.DataFrame:
    """Per output (ROOF_KEYS): `roof_s`, the binding roof, and `roof_bound`, which limit it is.
    Within a bound the fastest roof counts (fresh or recycled memory, NumPy or torch: each is a
    way to meet that limit); across bounds the slowest, since a workload needs both its
    writes and its sines."""
    ok = df[df["is_roof"].astype(bool) & (df["status"] == "ok") & (df["flags"] == "")]
    ok = ok.assign(roof_bound=ok["impl"].map(roof_bound))
    fastest = ok.groupby([*ROOF_KEYS, "roof_bound"])["median_s"].min().rename("roof_s").reset_index()
    binding = fastest.sort_values("roof_s", kind="stable").drop_duplicates(ROOF_KEYS, keep="last")
    return binding[[*ROOF_KEYS, "roof_s", "roof_bound"]]


def fills(df: pd.DataFrame) -> pd.DataFrame:
    """Per output (ROOF_KEYS): `fill_s`, the fastest memory roof (a fill or pass of the same
    bytes, fresh or recycled): the floor below which a timing is implausible. A roof slowed by
    load still bounds what is possible (it only raises the floor the cells beside it share);
    one whose clock disagreed does not."""
    clocked = df["flags"].fillna("").astype(str).str.contains("clock:", regex=False)
    ok = df[df["is_roof"].astype(bool) & (df["status"] == "ok") & ~clocked]
    memory = ok[ok["impl"].map(roof_bound) == "memory"]
    return memory.groupby(ROOF_KEYS)["median_s"].min().rename("fill_s").reset_index()


def newest(df: pd.DataFrame) -> pd.DataFrame:
    """One row per key: the last timed ok, else the last; `attempts` counts the key's rows.
    A retry that failed or was skipped never replaces a timing; a timing the supervisor found
    wrong against the reference (`judged`, harness.bench.fingerprint) is replaced by that
    verdict."""
    order = pd.RangeIndex(len(df))
    judged = df["judged"].fillna("").astype(str).ne("") if "judged" in df else False
    df = df.reset_index(drop=True).assign(attempts=df.groupby("key")["key"].transform("size").to_numpy(),
                                          _ok=((df["status"] == "ok") | judged).to_numpy(), _n=order)
    kept = df.sort_values(["_ok", "_n"], kind="stable").drop_duplicates("key", keep="last")
    return kept.sort_values("_n").drop(columns=["_ok", "_n"]).reset_index(drop=True)


def write(run_dir: Path, rows: Sequence[dict[str, Any]], run_id: str, machine: str) -> Path:
    """Rewrite bench.csv atomically from every row so far."""
    return io.write_csv(Path(run_dir) / FILENAME, tidy(rows, run_id, machine))
