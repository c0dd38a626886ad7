"""The report's PNGs: time vs length, speedup and roof heatmaps, thread scaling, error, frontier.

Each function draws one figure from report data and returns its path, or None
when the run holds nothing to draw (one thread setting, no verify.csv...), so
the report links only plots that exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize, TwoSlopeNorm
from matplotlib.ticker import FuncFormatter

from harness.core import kinds
from harness.report import fmt, labels
from harness.report.figures import bold_ticks, grid, heatmap, highlighted, legend, log_axis, save, styled
from harness.report.frontier import Point, Tradeoff
from harness.report.measures import groups, speedup, thread_range, thread_scaling, timed
from harness.report.pivots import pivot, speed_order
from harness.runs import flags as flag_rules
from harness.util import units

TIME_AXIS = FuncFormatter(lambda v, _: units.seconds(v))
#: log2 of the speedup at which heatmap colours saturate (16x): the cells still show the value.
SATURATE = 4.0
#: What the roof of each workload is (docs/design.md, measurement rules: a roof in every run).
#: On a GPU the roof is the device's own, timed in the same mode (harness.bench.modes).
DEVICE_ROOF = "bare device fill (or copy) of the same bytes, per synchronised call"
#: Each workload says what its roof is (`Workload.roof`).
ROOFS = {w.name: w.roof for k in kinds.KINDS.values() for w in k.workloads}
#: A float32 angle p * inv_freq is rounded to ~2^-24 relative, so sin is off by up to ~p * 2^-24.
F32_ANGLE_ROUNDING = 2.0**-24
#: The one roof line of a time plot: the fastest of the run's bare fills at each length.
ROOF_LINE = dict(color="black", linestyle="--", linewidth=1.6, marker="", zorder=2,
                 label="roof: fastest bare fill of the same bytes")


def time_vs_length(bench: pd.DataFrame, workload: str, dtype: str, machine: str, path: Path,
                   styles: Mapping[str, dict]) -> Optional[Path]:
    """Log-log median time vs length, one panel per width (columns) and thread setting (rows):
    the highlighted implementations in colour over the rest in grey, and the roof."""
    rows = bench[bench["ok"] & (bench["workload"] == workload) & (bench["dtype"] == dtype)]
    if rows.empty:
        return None
    if workload in ROOFS:
        roof = dict(ROOF_LINE, label=f"roof: {ROOFS[workload].split(' (')[0]}")
    else:
        roof = ROOF_LINE
    threads, widths = sorted(set(rows["threads"])), sorted(set(rows["d_model"]))
    length, width = kinds.of_workload(workload).axes
    fig, axes = grid(len(threads), len(widths), f"{workload}: median time vs length, {dtype}",
                     machine, sharex=True)
    for r, t in enumerate(threads):
        for c, d in enumerate(widths):
            ax = axes[r, c]
            panel = rows[(rows["threads"] == t) & (rows["d_model"] == d)]
            if panel.empty:    # the default sweep times one thread at the largest size only
                ax.axis("off")
                ax.text(0.5, 0.5, f"{width} = {d}: not timed at {fmt.threads(t)}",
                        ha="center", va="center", transform=ax.transAxes, color="0.4")
                continue
            for impl in speed_order(timed(panel)):
                line = panel[panel["impl"] == impl].sort_values("length")
                ax.loglog(line["length"], line["median_s"], **styled(styles, impl))
            fills = panel[panel["is_roof"]].groupby("length")["median_s"].min()
            if not fills.empty:   # a roof at one length is a mark, not an invisible line
                ax.loglog(fills.index, fills.to_numpy(),
                          **(roof if len(fills) > 1 else {**roof, "marker": "_", "markersize": 16}))
            log_axis(ax.yaxis, TIME_AXIS)
            ax.set_title(f"{width} = {d}, {_where(panel, t)}", fontsize=11)
            ax.set_xlabel(f"length ({length})")
            ax.set_ylabel("median time")
            ax.grid(True, which="major", alpha=0.3)
    legend(fig, axes)
    return save(fig, path)


def _where(rows: pd.DataFrame, threads: int) -> str:
    """A panel's thread count, or "GPU" when it holds only device cells (a GPU's time is not
    the host's threads')."""
    if len(rows) and (rows["device"] != "cpu").all():
        return "GPU"
    return fmt.threads(threads)


def speedup_heatmap(bench: pd.DataFrame, workload: str, baseline: str, machine: str,
                    path: Path, styles: Optional[Mapping[str, dict]] = None) -> Optional[Path]:
    """baseline / impl per cell, green faster and red slower, one panel per dtype x threads."""
    ratio = speedup(bench, baseline)
    mine = ratio[(bench["workload"] == workload) & (ratio > 0)]
    if mine.empty:
        return None
    limit = min(SATURATE, max(1.0, float(np.abs(np.log2(mine)).max())))
    return _heatmaps(bench, workload, ratio, machine, path,
                     f"{workload}: speedup vs {baseline} (> 1x is faster)",
                     TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit), "RdYlGn", np.log2, styles)


def roof_heatmap(bench: pd.DataFrame, workload: str, machine: str, path: Path,
                 styles: Optional[Mapping[str, dict]] = None) -> Optional[Path]:
    """median / roof per cell: 1x is the memory limit (`ROOFS`); darker is further from it."""
    rows = timed(bench)
    ratio = rows["roof_ratio"].where(rows["ok"])
    mine = ratio[(rows["workload"] == workload) & (ratio > 0)]
    if mine.empty:
        return None
    top = max(1.0, float(np.log10(mine).max()))
    on_device = bool((rows.loc[mine.index, "device"] != "cpu").all())
    roof = DEVICE_ROOF if on_device else ROOFS.get(workload, "the roof")
    return _heatmaps(rows, workload, ratio, machine, path, f"{workload}: time / roof; 1x = {roof}",
                     Normalize(0.0, top), "YlOrRd", np.log10, styles)


def _heatmaps(bench: pd.DataFrame, workload: str, values: pd.Series, machine: str, path: Path,
              title: str, norm: Normalize, cmap: str, colour_of,
              styles: Optional[Mapping[str, dict]]) -> Path:
    # an implementation that ran nowhere in a panel (a dtype it lacks) is left out of it
    panels = [(dtype, threads, rows[rows["impl"].isin(set(rows.loc[rows["ok"], "impl"]))])
              for dtype, threads, rows in groups(timed(bench[bench["workload"] == workload]))]
    # a panel with nothing to show (its baseline never ran in that dtype) is left out too
    panels = [panel for panel in panels if values.loc[panel[2].index].notna().any()]
    ncols = max(rows["size"].nunique() for _, _, rows in panels)
    heights = [0.34 * rows["impl"].nunique() + 1.6 for _, _, rows in panels]
    fig, axes = grid(len(panels), 1, title, machine,
                     panel=(max(6.0, 0.62 * ncols + 2.5), sum(heights) / len(heights)),
                     gridspec_kw={"height_ratios": heights})
    for ax, (dtype, threads, rows) in zip(axes[:, 0], panels):
        order = speed_order(rows)
        # a cell flagged for load is no measurement of the code: drawn apart, as a note
        marked = flag_rules.flagged(rows) & rows["ok"]
        laid = pivot(rows, values.loc[rows.index].where(~marked), order, fill=np.nan).astype(float)
        notes = pivot(rows, rows["status"].where(~rows["ok"], "").where(~marked, "flagged"), order)
        heatmap(ax, laid, notes, norm, cmap, fmt.ratio, colour_of, f"{dtype}, {fmt.threads(threads)}")
        bold_ticks(ax.get_yticklabels(), styles or {})
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
    """Error far out vs time at the reference size; the Pareto frontier ringed and joined.

    The highlighted implementations and the frontier are in colour and named beside their
    points (`labels.place`: no two names overlap); the rest are grey dots, named in the
    report's table; the ones verify fails are grey crosses.
    """
    points = [p for p in trade.points if p.accuracy is not None and p.accuracy.max_abs_err > 0]
    if not points:
        return None
    threads = _panels(points)
    fig, axes = grid(1, len(threads), f"{trade.workload}: accuracy vs speed at {trade.size}",
                     machine, panel=(6.4, 5.0), sharey=True)
    named: list[list[Point]] = []
    steps: list[Any] = []       # each panel's frontier, as drawn (labels keep off it)
    for ax, t in zip(axes[0], threads):
        mine = [p for p in points if p.threads == t]
        for p in mine:
            ax.loglog([p.median_s], [p.accuracy.max_abs_err], **_point_style(p, styles))
        front = sorted((p for p in mine if p.frontier), key=lambda p: p.median_s)
        xs, ys = [p.median_s for p in front], [p.accuracy.max_abs_err for p in front]
        ax.plot(xs, ys, color="black", linewidth=1.2, drawstyle="steps-post", zorder=2,
                label="Pareto frontier" if len(front) > 1 else "_one point: no line")
        steps.append([(x, y) for i, (x, y) in enumerate(zip(xs, ys))   # as drawn: its steps
                      for x, y in ([(x, ys[i - 1])] if i else []) + [(x, y)]])
        ax.set_title(fmt.threads(t), fontsize=11)
        ax.set_xlabel(f"median time at {trade.size}")
        ax.set_ylabel("max abs error, float32, long positions")
        ax.grid(True, which="major", alpha=0.3)
        named.append([p for p in mine if p.frontier or highlighted(styles, p.impl)])
    for ax in axes[0]:          # once every panel is drawn: the y axis is shared
        _pad_log_limits(ax, y=ax is axes[0][0])
        log_axis(ax.xaxis, TIME_AXIS)      # its labels chosen for the span as padded
    legend(fig, axes)
    fig.tight_layout(rect=(0, 0, 1, 0.95))        # final layout before labels are placed
    for ax, chosen, line in zip(axes[0], named, steps):
        chosen.sort(key=lambda p: (not p.frontier, p.median_s))
        labels.place(ax, [labels.Label(p.median_s, p.accuracy.max_abs_err, p.impl,
                                       styles.get(p.impl, {}).get("color", "black"))
                          for p in chosen], avoid=[line])
    return save(fig, path)


def _point_style(p: Point, styles: Mapping[str, dict]) -> dict:
    style = {**styled(styles, p.impl), "linestyle": "none", "markersize": 9}
    if not highlighted(styles, p.impl):
        style.update(marker="o", markersize=8 if p.frontier else 5, color="#a0a0a0", alpha=0.9)
    if p.verdict is not None:
        style.update(color="grey", marker="x", markersize=6, label="fails or not in verify")
    elif p.excluded is not None and highlighted(styles, p.impl):
        style.update(markerfacecolor="none", label=f"{p.impl} (not checked as far out)")
    if p.frontier:
        style.update(markeredgecolor="black", markeredgewidth=1.5, zorder=4)
    return style


def _panels(points: Sequence[Point]) -> list[int]:
    """The thread counts to draw: the most, and fewer only where an implementation timed at
    the most was timed there too (a panel of only the pure-Python seed, the one thing run at
    no other count, compares nothing)."""
    counts = sorted({p.threads for p in points})
    most = {p.impl for p in points if p.threads == counts[-1]}
    return [t for t in counts
            if t == counts[-1] or most & {p.impl for p in points if p.threads == t}]


def _pad_log_limits(ax, y: bool = True) -> None:
    """Room around the points for their names: a third of a decade each side in x, and with
    `y` six tenths of one in y (once for panels sharing it). Called after every point is
    drawn: a limit set earlier stops the shared axis from growing to later panels' points
    (the usual choice, 1e5 times less accurate far out, was left off the plot)."""
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo / 10 ** 0.35, hi * 10 ** 0.35)
    if y:
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo / 10 ** 0.6, hi * 10 ** 0.6)
