"""plots/precision-<kind>.png: one figure per kind, one panel per study (or per dtype).

Colour says the method (within a panel), line style the stored dtype, so the same method in
two dtypes reads as one family of lines; a dotted grey line marks GOOD_ULPS ulps of the panel's dtype.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.kinds.table.tolerance import eps
from harness.verbs.precision.common import DTYPES
from harness.verbs.precision.studies import KINDS, of_kind
from harness.verbs.precision.verdicts import GOOD_ULPS

STYLES = {"float32": "-", "float16": "--", "bfloat16": ":"}


def panels(df: pd.DataFrame, kind: str) -> list[tuple[str, str, pd.DataFrame]]:
    """(title, x label, rows) per panel: a study per panel, or a dtype per panel when a kind has
    one study (its lines would otherwise crowd one panel)."""
    mine = df[df.kind == kind]
    studies = [s for s in of_kind(kind) if (mine.study == s.name).any()]
    if len(studies) > 1:
        return [(s.title, s.axis.name, mine[mine.study == s.name]) for s in studies]
    study = studies[0]
    return [(f"{study.title}, stored in {d}", study.axis.name, mine[mine.dtype == d])
            for d in DTYPES if (mine.dtype == d).any()]


def plot(df: pd.DataFrame, kind: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = panels(df, kind)
    fig, axes = plt.subplots(1, len(shown), figsize=(5.6 * len(shown), 4.6), squeeze=False)
    for ax, (title, xlabel, part) in zip(axes[0], shown):
        bases = list(dict.fromkeys(s.removesuffix(" " + d) for s, d in zip(part.source, part.dtype)))
        palette = plt.get_cmap("tab20" if len(bases) > 10 else "tab10")
        for source, line in part.groupby("source", sort=False):
            dtype = line.dtype.iloc[0]
            color = palette(bases.index(source.removesuffix(" " + dtype)))
            x = line.position.to_numpy(dtype=float) + 1
            y = np.clip(line.max_abs_err.to_numpy(dtype=float), 1e-9, 4.0)   # Inf/NaN drawn at 4
            ax.loglog(x, y, STYLES.get(dtype, "-"), color=color, marker=".", ms=4, lw=1.2,
                      label=source)
        for dtype in dict.fromkeys(part.dtype):
            ax.axhline(GOOD_ULPS * eps(dtype), color="grey", lw=0.7, ls=STYLES.get(dtype, ":"))
        ax.set(title=title, xlabel=f"{xlabel} + 1", ylabel="max |error|", ylim=(1e-9, 5))
        ax.legend(fontsize=6.5, ncol=2 if part.source.nunique() > 8 else 1)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_all(df: pd.DataFrame, plots_dir: Path) -> list[Path]:
    """One figure per kind that has rows."""
    return [plot(df, kind, plots_dir / f"precision-{kind}.png")
            for kind in KINDS if len(df) and (df.kind == kind).any()]

