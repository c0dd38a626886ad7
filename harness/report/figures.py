"""Shared plotting setup: the Agg backend, one colour per implementation, titled figures, heatmaps.

Every plot of a report goes through here, so an implementation has the same
colour and marker in all of them and every PNG is titled with the machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.ticker import Formatter, FuncFormatter, NullFormatter  # noqa: E402

MARKERS = "osD^v<>pP*Xh"
#: tab20's strong colours first, then its light ones (every implementation in colour).
COLOUR_ORDER = tuple(range(0, 20, 2)) + tuple(range(1, 20, 2))
#: The few that matter in a highlighted plot, coloured by role so a role is read at a glance:
#: three shades of one hue per role (blue, orange, green, purple), never shared by two roles,
#: each dark enough for a name written in it to read on white beside the grey of the rest
#: (tab20c's lightest shades, #c6dbef and the like, did not).
ROLE_COLOURS = {"recommended": ("#08519c", "#3182bd", "#6baed6"),
                "usual choice": ("#a63603", "#e6550d", "#fd8d3c"),
                "Pareto": ("#006d2c", "#31a354", "#74c476")}
OTHER_ROLE_COLOURS = ("#54278f", "#756bb1", "#9e9ac8")
#: Everything else in a highlighted plot: thin, grey, behind, one legend entry for all.
OTHER_LABEL = "other implementations"
OTHER = dict(color="#b8b8b8", marker="", linewidth=0.8, alpha=0.8, zorder=1, label=OTHER_LABEL)
#: Roofs (bare fills) are drawn in black and greys, each with its own dash pattern.
ROOF_GREYS = ("black", "dimgrey", "darkgrey")
ROOF_DASHES = ("--", ":", "-.")
DPI = 110


def palette(impls: Iterable[str], roofs: Iterable[str] = (),
            highlight: Optional[Mapping[str, str]] = None) -> dict[str, dict]:
    """Line style per implementation: colour and marker; `roofs` grey and dashed.

    With `highlight` (impl -> its roles: "recommended for large, Pareto", "usual choice"...),
    only those get colours: the hue of their first role (ROLE_COLOURS, by its first word), a shade and marker of their own,
    drawn thick and on top, labelled with their role; the rest are `OTHER`: 27 series in 20
    colours cannot be told apart, 6 in colour over grey can.
    """
    roofs = sorted(set(roofs))
    names = sorted(set(impls) - set(roofs))
    styles: dict[str, dict] = {}
    if highlight is None:
        colours = plt.get_cmap("tab20").colors
        for i, name in enumerate(names):
            styles[name] = dict(color=colours[COLOUR_ORDER[i % 20]], marker=MARKERS[i % len(MARKERS)])
    else:
        chosen = sorted(set(highlight) - set(roofs))
        for name in names:
            styles[name] = dict(OTHER)
        used: dict[str, int] = {}
        for i, name in enumerate(chosen):
            role = highlight[name]
            first = next((r for r in ROLE_COLOURS if role.startswith(r)), role)
            shades = ROLE_COLOURS.get(first, OTHER_ROLE_COLOURS)
            n = used[first] = used.get(first, -1) + 1
            styles[name] = dict(color=shades[n % len(shades)], marker=MARKERS[i % len(MARKERS)],
                                linewidth=2.0, zorder=3,
                                label=f"{name} ({role})" if role else name)
    for i, name in enumerate(roofs):
        styles[name] = dict(color=ROOF_GREYS[i % len(ROOF_GREYS)], marker="", linewidth=2,
                            linestyle=ROOF_DASHES[i % len(ROOF_DASHES)])
    return styles


def highlighted(styles: Mapping[str, dict], impl: str) -> bool:
    """Whether `impl` is one of the few drawn in colour."""
    return styles.get(impl, {}).get("label") != OTHER_LABEL


def grid(nrows: int, ncols: int, title: str, machine: str,
         panel: tuple[float, float] = (4.6, 3.6), **kwargs) -> tuple[plt.Figure, np.ndarray]:
    """A figure of nrows x ncols panels (always a 2-D array), titled with the machine."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows + 0.9),
                             squeeze=False, **kwargs)
    fig.suptitle(f"{title} — {machine}", fontsize=13, fontweight="bold")
    return fig, axes


def legend(fig: plt.Figure, axes: np.ndarray) -> None:
    """One legend for the whole figure, right of the panels, without duplicate entries
    (the grey `OTHER` lines are one entry, last)."""
    seen: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if OTHER_LABEL in seen:
        seen[OTHER_LABEL] = seen.pop(OTHER_LABEL)
    if seen:
        fig.legend(list(seen.values()), list(seen.keys()), loc="center left",
                   bbox_to_anchor=(1.0, 0.5), fontsize=9, frameon=False)


def save(fig: plt.Figure, path: Path) -> Path:
    """Write the PNG (parents created; the canvas grows to hold the legend) and free the figure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def heatmap(ax: plt.Axes, values: pd.DataFrame, notes: pd.DataFrame, norm: Normalize, cmap: str,
            show: Callable[[float], str], colour_of: Callable[[float], float] = lambda v: v,
            title: str = "") -> matplotlib.image.AxesImage:
    """impl x size matrix coloured by `colour_of(value)`, each cell annotated with `show(value)`
    or, where there is no value, with its note (skip, error...) in grey. The annotations lie
    inside their cells, so the layout passes (tight_layout, savefig's tight box) skip them:
    measuring thousands of them took a tenth of the plots' CPU, and the PNGs of the committed
    run came out pixel for pixel the same."""
    data = values.to_numpy(dtype=float)
    image = ax.imshow(np.vectorize(colour_of)(data), cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(data.shape[1]), [str(c) for c in values.columns], rotation=45, ha="right",
                  fontsize=8)
    ax.set_yticks(range(data.shape[0]), [str(i) for i in values.index], fontsize=9)
    ax.set_title(title, fontsize=11)
    small = data.size > 300
    size = 6 if small else 8
    for (r, c), v in np.ndenumerate(data):
        if np.isfinite(v):
            red, green, blue, _ = image.cmap(norm(colour_of(v)))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(c, r, show(v), ha="center", va="center", fontsize=size, in_layout=False,
                    color="white" if dark else "black")
        elif notes.iat[r, c]:
            ax.text(c, r, notes.iat[r, c], ha="center", va="center", fontsize=size, color="grey",
                    style="italic", in_layout=False)
    return image


def log_axis(axis: matplotlib.axis.Axis, formatter: Formatter) -> None:
    """A log axis labelled with `formatter` (e.g. times with units): at decades; at 2x and 5x a
    decade too when the data spans less than one and a half decades; at every minor tick when
    it spans less than 3x, where 2x and 5x leave one label or none (call after plotting)."""
    lo, hi = sorted(axis.get_view_interval())
    axis.set_major_formatter(formatter)
    if lo > 0 and hi / lo < 3:
        axis.set_minor_formatter(formatter)
    elif lo > 0 and hi / lo < 30:
        def minor(value: float, pos: int | None = None) -> str:
            leading = value / 10 ** np.floor(np.log10(value))
            return formatter(value, pos) if min(abs(leading - 2), abs(leading - 5)) < 1e-6 else ""
        axis.set_minor_formatter(FuncFormatter(minor))
    else:
        axis.set_minor_formatter(NullFormatter())


def styled(styles: Mapping[str, dict], impl: str) -> dict:
    """Plot keyword arguments of one implementation (with its label; `OTHER` ones share one)."""
    return {"label": impl, "markersize": 5, **styles.get(impl, {})}


def bold_ticks(labels: Iterable[matplotlib.text.Text], styles: Mapping[str, dict]) -> None:
    """Tick labels of highlighted implementations in bold (heatmap rows), when some are not."""
    if not any(style.get("label") == OTHER_LABEL for style in styles.values()):
        return
    for text in labels:
        if text.get_text() in styles and highlighted(styles, text.get_text()):
            text.set_fontweight("bold")
