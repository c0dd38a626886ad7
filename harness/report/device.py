"""The GPU section: each device implementation in every timing mode, beside the device's roofs.

The 1-D table is set against the bare fill by name (below); every other workload (rotary apply,
caches, grids, timesteps) against the binding roof bench matched to each cell (`roof_ratio`:
the same bytes in the same mode and run), with the verify grade of each implementation.

Three numbers per cell (harness.bench.modes): `sync` (one call and a device
sync: what Python sees, launch overhead included), `flush` (the same from a
cold L2) and `graph` (CUDA-graph replays back to back: kernel time). Launch
overhead is sync - graph. Each implementation is set against the bare fill of
the same bytes timed in the same mode and run (`roof-torch-cuda-fill`), so
`x fill` is the ratio of times and `% of fill BW` the share of the bandwidth
that fill reached.
"""

from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd

from harness.report import fmt, markdown
from harness.util import units

FILL = "roof-torch-cuda-fill"
HEADLINE = (8192, 1024)          # 32 MiB in float32: fits an H100's 50 MB L2
#: The workload whose cells make the headline (modes x sizes at HEADLINE, launch overhead): the
#: 1-D table's, the one every GPU backend builds; every other workload gets its own block.
HEADLINE_WORKLOAD = "table"
MODES = ("sync", "flush", "graph")
DTYPE_ORDER = ("float32", "float16", "bfloat16", "float64")


def section(device: Optional[pd.DataFrame], env: Mapping, verify: Optional[pd.DataFrame] = None) -> str:
    """The whole GPU section, or '' for a run without device cells."""
    if device is None or device.empty:
        return ""
    timed = device[device["ok"]]
    rows = timed[timed["workload"] == HEADLINE_WORKLOAD]
    others = [workload_blocks(timed[timed["workload"] == w], w, verify)
              for w in sorted(set(timed["workload"]) - {HEADLINE_WORKLOAD})]
    if rows.empty:
        return markdown.join(markdown.heading(2, "GPU"), _facts(env) + ". " + _ROOF_TEXT, *others) \
            if any(others) else ""
    length, d_model = _headline(rows)
    blocks = [markdown.heading(2, "GPU"), f"{_facts(env)}. " + _MODES_TEXT]
    for dtype in _dtypes(rows):
        table = headline_table(rows, length, d_model, dtype)
        if not table.empty:
            blocks += [markdown.heading(3, f"{length} x {d_model} {dtype}"),
                       markdown.table(table, index=False)]
    small = launch_table(rows)
    if not small.empty:
        blocks += [markdown.heading(3, "Launch overhead at small sizes (float32)"),
                   "sync - graph per call, where the call is mostly launch: "
                   + ", ".join(f"{s}" for s in small.columns[1:]) + ".",
                   markdown.table(small, index=False)]
    return markdown.join(*blocks, *others)


def _facts(env: Mapping) -> str:
    gpu = (env.get("gpus") or [{}])[0]
    return ", ".join(p for p in (
        gpu.get("name") or env.get("gpu") or "",
        f"L2 {gpu['l2_bytes'] / 2**20:.0f} MiB" if gpu.get("l2_bytes") else "",
        f"theoretical DRAM {gpu['dram_gbps_theoretical']:.0f} GB/s" if gpu.get("dram_gbps_theoretical")
        else "", f"driver {gpu['driver_version']}" if gpu.get("driver_version") else "") if p)


_ROOF_TEXT = ("`x roof`: time over the binding roof of the same bytes timed in the same mode and run "
              "(for rotary apply, the device copy or pass over q and k); `% of roof BW`: the share "
              "of that roof's bandwidth reached in `graph` mode; `launch`: sync - graph; `grade`: the "
              "worst verify grade of the implementation in that dtype (exact, float32, fail).")


def workload_blocks(rows: pd.DataFrame, workload: str, verify: Optional[pd.DataFrame]) -> str:
    """A workload's device cells beside their roofs: one table per dtype at its largest size,
    then the share of the roof's bandwidth in graph mode at every size."""
    if rows.empty or "roof_ratio" not in rows:
        return ""
    length, d_model = _headline(rows)
    blocks = [markdown.heading(3, f"{workload} on the device")]
    for dtype in _dtypes(rows):
        table = roof_table(rows, length, d_model, dtype, verify)
        if not table.empty:
            blocks += [markdown.heading(4, f"{workload} {length} x {d_model} {dtype}"),
                       markdown.table(table, index=False)]
    sweep = share_table(rows)
    if not sweep.empty:
        blocks += [markdown.heading(4, f"{workload}: % of roof BW (graph) at every size"),
                   markdown.table(sweep, index=False)]
    return markdown.join(*blocks) if len(blocks) > 1 else ""


def _grades(verify: Optional[pd.DataFrame], dtype: str) -> Mapping[str, str]:
    """impl -> its worst verify grade in `dtype` (fail < float32 < exact)."""
    if verify is None or "grade" not in verify or verify.empty:
        return {}
    rank = {"fail": 0, "float32": 1, "exact": 2}
    mine = verify[(verify["dtype"] == dtype) & verify["grade"].isin(rank)]
    return {impl: min(group, key=rank.get) for impl, group in mine.groupby("impl")["grade"]}


def roof_table(rows: pd.DataFrame, length: int, d_model: int, dtype: str,
               verify: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """One row per implementation (fastest graph time first): time and x roof per mode, the
    share of the roof's bandwidth in graph mode, launch overhead and grade."""
    cell = rows[(rows["length"] == length) & (rows["d_model"] == d_model) & (rows["dtype"] == dtype)
                & ~rows["is_roof"].astype(bool)]
    if cell.empty:
        return pd.DataFrame()
    times = medians(cell)
    ratios = cell.pivot_table(index="impl", columns="mode", values="roof_ratio", aggfunc="min")
    grades = _grades(verify, dtype)
    order = times.get("graph", times.get("sync")).sort_values(na_position="last").index
    out = []
    for impl in order:
        row = {"impl": impl}
        for mode in MODES:
            if mode in times.columns:
                row[mode] = units.seconds(times.loc[impl].get(mode))
                ratio = ratios.loc[impl].get(mode) if mode in ratios else None
                row[f"x roof ({mode})"] = fmt.ratio(ratio) if ratio is not None else "-"
        graph = ratios.loc[impl].get("graph") if "graph" in ratios else float("nan")
        row["% of roof BW"] = f"{100 / graph:.0f}%" if pd.notna(graph) and graph > 0 else "-"
        if {"sync", "graph"} <= set(times.columns):
            row["launch"] = units.seconds(times.loc[impl].get("sync") - times.loc[impl].get("graph"))
        row["grade"] = grades.get(impl, "-")
        out.append(row)
    return pd.DataFrame(out)


def share_table(rows: pd.DataFrame) -> pd.DataFrame:
    """impl x (length x d_model dtype): % of the roof's bandwidth in graph mode."""
    graph = rows[(rows["mode"] == "graph") & ~rows["is_roof"].astype(bool) & (rows["roof_ratio"] > 0)]
    if graph.empty:
        return pd.DataFrame()
    graph = graph.sort_values(["dtype", "d_model", "length"], key=lambda c: c.map(
        {d: i for i, d in enumerate(DTYPE_ORDER)}) if c.name == "dtype" else c)
    label = graph["length"].astype(str) + "x" + graph["d_model"].astype(str) + " " + graph["dtype"]
    share = (100 / graph["roof_ratio"]).round().astype(int).astype(str) + "%"
    frame = graph.assign(size=label, share=share).pivot_table(
        index="impl", columns="size", values="share", aggfunc="first")
    return frame[list(dict.fromkeys(label))].rename_axis(None, axis=1).reset_index()


_MODES_TEXT = ("`sync`: one call and a device sync per round (what Python sees); `flush`: the "
               "same with L2 written over before each round; `graph`: the call replayed from a "
               "CUDA graph, back to back (kernel time). `x fill`: time over the bare fill of the "
               f"same bytes in the same mode (`{FILL}`); `launch`: sync - graph.")


def _headline(rows: pd.DataFrame) -> tuple[int, int]:
    """8192 x 1024 when it was timed, else the largest size timed."""
    sizes = set(zip(rows["length"], rows["d_model"]))
    if HEADLINE in sizes:
        return HEADLINE
    return max(sizes, key=lambda s: (s[0] * s[1], s))


def _dtypes(rows: pd.DataFrame) -> list[str]:
    present = set(rows["dtype"])
    return [d for d in DTYPE_ORDER if d in present] + sorted(present - set(DTYPE_ORDER))


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """impl x mode -> median seconds, for rows of one size and dtype."""
    return rows.pivot_table(index="impl", columns="mode", values="median_s", aggfunc="min")


def headline_table(rows: pd.DataFrame, length: int, d_model: int, dtype: str) -> pd.DataFrame:
    """One row per implementation (fastest graph time first): times per mode, x fill, launch."""
    cell = rows[(rows["length"] == length) & (rows["d_model"] == d_model) & (rows["dtype"] == dtype)]
    times = medians(cell)
    if FILL not in times.index:
        return pd.DataFrame()
    nbytes = float(cell["bytes_out"].iloc[0]) if "bytes_out" in cell else float("nan")
    fill = times.loc[FILL]
    order = times.get("graph", times.get("sync")).sort_values(na_position="last").index
    out = []
    for impl in order:
        t = times.loc[impl]
        row = {"impl": impl}
        for mode in MODES:
            if mode in times.columns:
                row[mode] = units.seconds(t.get(mode))
                row[f"x fill ({mode})"] = fmt.ratio(t.get(mode) / fill.get(mode))
        if "graph" in times.columns:
            graph = t.get("graph")
            row["GB/s (graph)"] = f"{nbytes / graph / 1e9:.0f}" if pd.notna(graph) else "-"
            row["% of fill BW"] = f"{100 * fill.get('graph') / graph:.0f}%" if pd.notna(graph) else "-"
            row["launch"] = units.seconds(t.get("sync") - graph)
        out.append(row)
    return pd.DataFrame(out)


def launch_table(rows: pd.DataFrame) -> pd.DataFrame:
    """impl x (the two smallest float32 sizes): launch overhead, sync - graph."""
    f32 = rows[rows["dtype"] == "float32"]
    if not {"sync", "graph"} <= set(f32["mode"]):
        return pd.DataFrame()
    everything = sorted(set(zip(f32["length"], f32["d_model"])), key=lambda s: (s[0] * s[1], s))
    columns = {}
    for length, d_model in everything[:2]:
        times = medians(f32[(f32["length"] == length) & (f32["d_model"] == d_model)])
        if {"sync", "graph"} <= set(times.columns):
            columns[f"{length}x{d_model}"] = times["sync"] - times["graph"]
    frame = pd.DataFrame(columns).dropna(how="all")
    if frame.empty:
        return frame
    return frame.map(units.seconds).rename_axis("impl").reset_index()
