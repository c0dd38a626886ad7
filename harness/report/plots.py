"""The report's PNGs: time vs length, speedup and roof heatmaps, thread scaling, error, frontier.

Each function draws one figure from report data and returns its path, or None
when the run holds nothing to draw (one thread setting, no verify.csv...), so
the report links only plots that exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize, TwoSlopeNorm
from matplotlib.ticker import FuncFormatter

from harness.report import fmt
from harness.report.figures import grid, heatmap, legend, log_axis, save, styled
from harness.report.frontier import Tradeoff
from harness.report.measures import groups, speedup, thread_range, thread_scaling, timed
from harness.report.pivots import pivot, speed_order

TIME_AXIS = FuncFormatter(lambda v, _: fmt.time(v))
#: log2 of the speedup at which heatmap colours saturate (16x): the cells still show the value.
SATURATE = 4.0
#: What the roof of each workload is (docs/design.md, measurement rules: a roof in every run).
ROOFS = {"table": "fastest bare fill of the same bytes (fresh or recycled memory)",
         "forward": "fastest bare x + y of the same shape (fresh or recycled memory)"}
#: A float32 angle p * inv_freq is rounded to ~2^-24 relative, so sin is off by up to ~p * 2^-24.
F32_ANGLE_ROUNDING = 2.0**-24


def time_vs_length(bench: pd.DataFrame, workload: str, dtype: str, machine: str, path: Path,
                   styles: Mapping[str, dict]) -> Optional[Path]:
    """Log-log median time vs length, one panel per width (columns) and thread setting (rows)."""
    rows = bench[bench["ok"] & (bench["workload"] == workload) & (bench["dtype"] == dtype)]
    if rows.empty:
        return None
    threads, widths = sorted(set(rows["threads"])), sorted(set(rows["d_model"]))
    fig, axes = grid(len(threads), len(widths), f"{workload}: median time vs length, {dtype}",
                     machine, sharex=True)
    for r, t in enumerate(threads):
        for c, d in enumerate(widths):
            ax = axes[r, c]
            panel = rows[(rows["threads"] == t) & (rows["d_model"] == d)]
            for impl in speed_order(panel):
                line = panel[panel["impl"] == impl].sort_values("length")
                ax.loglog(line["length"], line["median_s"], **styled(styles, impl))
            log_axis(ax.yaxis, TIME_AXIS)
            ax.set_title(f"d_model = {d}, {fmt.threads(t)}", fontsize=11)
            ax.set_xlabel("length (positions)")
            ax.set_ylabel("median time")
            ax.grid(True, which="major", alpha=0.3)
    legend(fig, axes)
    return save(fig, path)


def speedup_heatmap(bench: pd.DataFrame, workload: str, baseline: str, machine: str,
                    path: Path) -> Optional[Path]:
    """baseline / impl per cell, green faster and red slower, one panel per dtype x threads."""
    ratio = speedup(bench, baseline)
    mine = ratio[(bench["workload"] == workload) & (ratio > 0)]
    if mine.empty:
        return None
    limit = min(SATURATE, max(1.0, float(np.abs(np.log2(mine)).max())))
    return _heatmaps(bench, workload, ratio, machine, path,
                     f"{workload}: speedup vs {baseline} (> 1x is faster)",
                     TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit), "RdYlGn", np.log2)


def roof_heatmap(bench: pd.DataFrame, workload: str, machine: str, path: Path) -> Optional[Path]:
    """median / roof per cell: 1x is the memory limit (`ROOFS`); darker is further from it."""
    rows = timed(bench)
    ratio = rows["roof_ratio"].where(rows["ok"])
    mine = ratio[(rows["workload"] == workload) & (ratio > 0)]
    if mine.empty:
        return None
    top = max(1.0, float(np.log10(mine).max()))
    return _heatmaps(rows, workload, ratio, machine, path,
                     f"{workload}: time / roof (1x = {ROOFS.get(workload, 'roof')})",
                     Normalize(0.0, top), "YlOrRd", np.log10)


def _heatmaps(bench: pd.DataFrame, workload: str, values: pd.Series, machine: str, path: Path,
              title: str, norm: Normalize, cmap: str, colour_of) -> Path:
    panels = list(groups(timed(bench[bench["workload"] == workload])))
    ncols = max(rows["size"].nunique() for _, _, rows in panels)
    nrows = max(rows["impl"].nunique() for _, _, rows in panels)
    fig, axes = grid(len(panels), 1, title, machine,
                     panel=(max(6.0, 0.62 * ncols + 2.5), 0.34 * nrows + 1.6))
    for ax, (dtype, threads, rows) in zip(axes[:, 0], panels):
        order = speed_order(rows)
        laid = pivot(rows, values.loc[rows.index], order, fill=np.nan).astype(float)
        notes = pivot(rows, rows["status"].where(~rows["ok"], ""), order)
        heatmap(ax, laid, notes, norm, cmap, fmt.ratio, colour_of, f"{dtype}, {fmt.threads(threads)}")
    return save(fig, path)


def scaling(bench: pd.DataFrame, workload: str, machine: str, path: Path,
            styles: Mapping[str, dict]) -> Optional[Path]:
    """Speedup of the most threads over the fewest vs table size, one panel per dtype."""
    rows = timed(bench[bench["workload"] == workload])
    span = thread_range(rows)
    data = thread_scaling(rows)
    if span is None or data.empty:
        return None
    lo, hi = span
    dtypes = sorted(set(data["dtype"]))
    fig, axes = grid(1, len(dtypes), f"{workload}: speedup of {fmt.threads(hi)} over "
                     f"{fmt.threads(lo)}", machine, sharey=True)
    for ax, dtype in zip(axes[0], dtypes):
        panel = data[data["dtype"] == dtype]
        for impl, line in panel.groupby("impl"):
            mean = np.exp(np.log(line["scaling"]).groupby(line["elements"]).mean())
            ax.semilogx(mean.index, mean.to_numpy(), **styled(styles, impl))
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.axhline(hi / lo, color="black", linestyle="--", linewidth=1, label="ideal (linear)")
        ax.set_title(dtype, fontsize=11)
        ax.set_xlabel("elements (length x d_model)")
        ax.set_ylabel(f"time at {lo} / time at {hi} threads")
        ax.grid(True, alpha=0.3)
    legend(fig, axes)
    return save(fig, path)


def error_vs_position(errors: pd.DataFrame, dtype: str, machine: str, path: Path,
                      styles: Mapping[str, dict]) -> Optional[Path]:
    """Worst verify error vs the largest position of the case, log-log, with the rounding guide."""
    errors = errors[(errors["max_position"] > 0) & (errors["max_abs_err"] > 0)]
    if errors.empty:
        return None
    fig, axes = grid(1, 1, f"verify: max abs error vs position, {dtype}", machine, panel=(8.0, 5.0))
    ax = axes[0, 0]
    for impl, line in errors.groupby("impl"):
        ax.loglog(line["max_position"], line["max_abs_err"], **styled(styles, impl))
    span = np.array([errors["max_position"].min(), errors["max_position"].max()], dtype=float)
    ax.loglog(span, span * F32_ANGLE_ROUNDING, color="grey", linestyle=":",
              label=r"$p \cdot 2^{-24}$ (float32 angle rounding)")
    ax.set_xlabel("largest position in the table")
    ax.set_ylabel("max |impl - float64 reference|")
    ax.grid(True, which="major", alpha=0.3)
    legend(fig, axes)
    return save(fig, path)


def frontier(trade: Tradeoff, machine: str, path: Path, styles: Mapping[str, dict]) -> Optional[Path]:
    """Error far out vs time at the reference size; the Pareto frontier ringed and joined."""
    points = [p for p in trade.points if p.accuracy is not None and p.accuracy.max_abs_err > 0]
    if not points:
        return None
    threads = sorted({p.threads for p in points})
    fig, axes = grid(1, len(threads), f"{trade.workload}: accuracy vs speed at {trade.size}",
                     machine, panel=(6.0, 4.8), sharey=True)
    for ax, t in zip(axes[0], threads):
        mine = [p for p in points if p.threads == t]
        for i, p in enumerate(mine):
            style = {**styled(styles, p.impl), "linestyle": "none", "markersize": 9}
            if p.verdict is not None:
                style.update(color="grey", marker="x", label=f"{p.impl} (fails or not in verify)")
            elif p.excluded is not None:
                style.update(markerfacecolor="none", label=f"{p.impl} (not checked as far out)")
            if p.frontier:
                style.update(markeredgecolor="black", markeredgewidth=1.5)
            ax.loglog([p.median_s], [p.accuracy.max_abs_err], **style)
            ax.annotate(p.impl, (p.median_s, p.accuracy.max_abs_err), fontsize=7,
                        xytext=(5, 4 if i % 2 == 0 else -10), textcoords="offset points")
        front = sorted((p for p in mine if p.frontier), key=lambda p: p.median_s)
        ax.plot([p.median_s for p in front], [p.accuracy.max_abs_err for p in front],
                color="black", linewidth=1.2, drawstyle="steps-post", label="Pareto frontier")
        log_axis(ax.xaxis, TIME_AXIS)
        ax.set_title(fmt.threads(t), fontsize=11)
        ax.set_xlabel(f"median time at {trade.size}")
        ax.set_ylabel("max abs error, float32, long positions")
        ax.grid(True, which="major", alpha=0.3)
    legend(fig, axes)
    return save(fig, path)
