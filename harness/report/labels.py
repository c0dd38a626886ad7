"""Point labels that never overlap: each label tries positions around its point until one is free.

Scatter plots of implementations cluster (several builders share an algorithm,
so their time and error nearly coincide), and labels at a fixed offset pile on
top of each other. Here each label, in priority order, tries sixteen directions at
growing distances (joined to its point by a thin line past the first ring) and
takes the first spot that stays inside the axes and overlaps neither a placed
label, a marker nor a line it is told to avoid (a frontier drawn through the
points would strike a name out); a label with no free spot is left out (its point keeps its
colour and legend entry). Call after the axes limits and the layout are final.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

#: Distances from the point, in typographic points, tried in order.
RINGS = (6.0, 14.0, 26.0, 40.0, 58.0, 80.0, 106.0)
#: Angles tried on each ring, in degrees: right first (where a reader looks for a point's
#: name), then alternately above and below, working round to the left.
ANGLES = (20, -20, 45, -45, 90, -90, 0, 160, -160, 135, -135, 65, -65, 115, -115, 180)
#: Half the side of the square a marker occupies, in pixels at the figure's dpi.
MARKER_PX = 6.0


@dataclass(frozen=True)
class Label:
    """A point (data coordinates) and the text to put near it."""

    x: float
    y: float
    text: str
    color: str = "black"


def place(ax: plt.Axes, labels: Sequence[Label], fontsize: float = 8.0,
          avoid: Sequence[Sequence[tuple[float, float]]] = ()) -> list[Annotation]:
    """Annotate `labels` in order without overlaps, and off the polylines `avoid` (data
    coordinates); returns the annotations placed."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken = [_marker_box(ax, lab) for lab in labels]
    lines = [Path(ax.transData.transform(line)) for line in avoid if len(line) > 1]
    placed = []
    for label in labels:
        note = _first_free(ax, label, fontsize, renderer, frame, taken, lines)
        if note is not None:
            taken.append(extent(note, renderer))
            placed.append(note)
    return placed


def extent(note: Annotation, renderer) -> Bbox:
    """The box of a label's text alone: its leader line may cross others, its words may not."""
    note.update_positions(renderer)
    return Text.get_window_extent(note, renderer)


def overlaps(boxes: Sequence[Bbox]) -> list[tuple[int, int]]:
    """Index pairs of boxes that overlap (for tests and for checking a finished figure)."""
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


def crosses(box: Bbox, lines: Sequence[Path]) -> bool:
    """Whether any of `lines` (display coordinates) passes through `box`."""
    return any(line.intersects_bbox(box, filled=False) for line in lines)


def _first_free(ax: plt.Axes, label: Label, fontsize: float, renderer, frame: Bbox,
                taken: list[Bbox], lines: Sequence[Path] = ()) -> Annotation | None:
    for ring in RINGS:
        for angle in ANGLES:
            dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
            ha = "left" if dx > 0.3 else "right" if dx < -0.3 else "center"
            va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
            arrow = dict(arrowstyle="-", color=label.color, lw=0.6, shrinkA=0, shrinkB=3) \
                if ring > RINGS[0] else None
            note = ax.annotate(label.text, (label.x, label.y), xytext=(dx * ring, dy * ring),
                               textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                               color=label.color, arrowprops=arrow, annotation_clip=False)
            box = extent(note, renderer)
            inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            if inside and not any(box.overlaps(t) for t in taken) and not crosses(box, lines):
                return note
            note.remove()
    return None


def _marker_box(ax: plt.Axes, label: Label) -> Bbox:
    x, y = ax.transData.transform((label.x, label.y))
    return Bbox.from_extents(x - MARKER_PX, y - MARKER_PX, x + MARKER_PX, y + MARKER_PX)
