"""Plots readable at a glance: the few that matter in distinct colours, the rest grey, no label on
another.

The figures are caught before they are written (`plots.save` replaced), so the
tests read what a reader would see: line colours, legend entries and the
rendered extents of every label.
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex

from harness.report import figures, labels, load_run, plots
from harness.report.accuracy import Accuracy
from harness.report.frontier import Point, Tradeoff
from tests.test_report import write_run

GREY = to_hex(figures.OTHER["color"])


@pytest.fixture
def caught(monkeypatch):
    """The figures the plot functions would have saved, still open."""
    found: list[plt.Figure] = []

    def keep(fig, path):
        fig.canvas.draw()
        found.append(fig)
        return path

    monkeypatch.setattr(plots, "save", keep)
    yield found
    for fig in found:
        plt.close(fig)


def legend_labels(fig: plt.Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_palette_colours_only_the_highlighted_each_its_own():
    impls = [f"impl-{i}" for i in range(27)]
    roles = {"impl-3": "recommended", "impl-7": "usual choice", "impl-9": "Pareto",
             "impl-12": "recommended for small and large, Pareto"}
    styles = figures.palette(impls, roofs=["roof-a"], highlight=roles)
    coloured = {name: s for name, s in styles.items() if figures.highlighted(styles, name)
                and name != "roof-a"}
    assert set(coloured) == set(roles)
    assert len({(to_hex(s["color"]), s["marker"]) for s in coloured.values()}) == len(roles)
    assert len({to_hex(s["color"]) for s in coloured.values()}) == len(roles)   # colours alone differ
    assert GREY not in {to_hex(s["color"]) for s in coloured.values()}
    assert styles["impl-12"]["label"] == "impl-12 (recommended for small and large, Pareto)"
    assert to_hex(styles["impl-12"]["color"]) in figures.ROLE_COLOURS["recommended"]
    others = [s for name, s in styles.items() if name not in roles and name != "roof-a"]
    assert len(others) == 23 and all(s["label"] == figures.OTHER_LABEL for s in others)


def test_a_pick_is_named_with_the_size_regimes_it_is_recommended_for():
    """A plot spans every size: "recommended" alone did not say where."""
    from types import SimpleNamespace

    from harness.report.pipeline import _roles
    from harness.report.recommend import REGIMES
    small, medium, large = REGIMES
    picks = [SimpleNamespace(impl="a", regime=large), SimpleNamespace(impl="a", regime=small),
             SimpleNamespace(impl="b", regime=large),
             *(SimpleNamespace(impl="c", regime=r) for r in (large, medium, small))]
    assert _roles(picks, {"t": "b"}, []) == {"a": "recommended for small and large",
                                               "b": "recommended for large, usual choice",
                                               "c": "recommended for every size"}


def test_time_plot_draws_the_few_in_colour_over_grey_with_one_roof(tmp_path, caught):
    run = load_run(write_run(tmp_path))
    styles = figures.palette(run.bench["impl"], roofs=["roof-numpy-fill"],
                             highlight={"fast-good": "recommended", "seed-numpy-stack": "usual choice"})
    plots.time_vs_length(run.bench, "table", "float32", "box", tmp_path / "t.png", styles)
    fig = caught[0]
    for ax in fig.axes:
        colours = [to_hex(line.get_color()) for line in ax.get_lines()]
        assert colours.count(GREY) == len(colours) - 3       # two highlighted and the roof
    assert legend_labels(fig) == ["fast-good (recommended)", "seed-numpy-stack (usual choice)",
                                  "roof: fastest bare fill of the same bytes",
                                  figures.OTHER_LABEL]


def test_a_panel_not_timed_says_so_and_a_one_length_roof_is_drawn(tmp_path, caught):
    """The default sweep times one thread at the largest size only: that thread count's panel at
    a smaller width is empty (an axis from 0 ns to 1 s was drawn), and its roof has one length."""
    from tests.test_report import SMALL, bench_rows

    rows = [r for r in bench_rows(**SMALL)
            if not (r["threads"] == 1 and (r["d_model"], r["length"]) != (1024, 8192))]
    run = load_run(write_run(tmp_path, bench=rows))
    styles = figures.palette(run.bench["impl"], roofs=["roof-numpy-fill"], highlight={})
    plots.time_vs_length(run.bench, "table", "float32", "box", tmp_path / "t.png", styles)
    empty = [ax for ax in caught[0].axes if not ax.axison and ax.texts]
    assert len(empty) == 1 and "not timed at 1 thread" in empty[0].texts[0].get_text()
    one_length = [line for ax in caught[0].axes if ax.axison for line in ax.get_lines()
                  if line.get_linestyle() == "--" and len(line.get_xdata()) == 1]
    assert one_length and all(line.get_marker() not in ("", "None", None) for line in one_length)


def clustered_trade() -> Tradeoff:
    """Twelve implementations within a few per cent of each other: labels at a fixed offset pile up."""
    rng = np.random.default_rng(0)
    points = [Point(f"impl-number-{i}", "cpu", "paper", 1, 1e-3 * (1 + 0.03 * rng.random()), 2.0,
                    (), Accuracy(1e-7 * (1 + 0.05 * rng.random()), 1_000_063), None,
                    frontier=i < 2)
              for i in range(12)]
    return Tradeoff("table", 8192, 1024, "float32", tuple(points))


def test_frontier_labels_never_overlap_each_other_or_a_marker(tmp_path, caught):
    trade = clustered_trade()
    styles = figures.palette([p.impl for p in trade.points],
                             highlight={p.impl: "recommended" for p in trade.points})
    plots.frontier(trade, "box", tmp_path / "f.png", styles)
    fig = caught[0]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    names = [t for t in ax.texts if t.get_text().startswith("impl-number-")]
    assert len(names) >= 9                               # most are named ...
    boxes = [labels.extent(t, renderer) for t in names]
    assert labels.overlaps(boxes) == []                  # ... and no name sits on another
    frame = ax.get_window_extent(renderer)
    assert all(frame.contains(b.x0, b.y0) and frame.contains(b.x1, b.y1) for b in boxes)
    markers = [labels._marker_box(ax, labels.Label(p.median_s, p.accuracy.max_abs_err, ""))
               for p in trade.points]
    assert not any(b.overlaps(m) for b, m in itertools.product(boxes, markers))
    frontier = next(line for line in ax.get_lines() if line.get_label() == "Pareto frontier")
    drawn = frontier.get_transform().transform_path(frontier.get_path())
    assert not any(labels.crosses(b, [drawn]) for b in boxes)   # no name struck through


def test_place_leaves_out_a_label_with_no_free_spot():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    crowd = [labels.Label(0.5, 0.5, f"a rather long label {i}") for i in range(40)]
    placed = labels.place(ax, crowd)
    boxes = [labels.extent(t, fig.canvas.get_renderer()) for t in placed]
    assert 0 < len(placed) < 40 and labels.overlaps(boxes) == []
    plt.close(fig)


def test_heatmap_leaves_out_rows_that_never_ran_and_bolds_the_highlighted(tmp_path, caught):
    run = load_run(write_run(tmp_path))
    bench = run.bench.copy()
    bench.loc[(bench["impl"] == "mid-good") & (bench["dtype"] == "float64"), "ok"] = False
    styles = figures.palette(bench["impl"], roofs=["roof-numpy-fill"],
                             highlight={"fast-good": "recommended"})
    plots.roof_heatmap(bench, "table", "box", tmp_path / "r.png", styles)
    fig = caught[0]
    rows = {ax.get_title(): [t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes
            if ax.get_title()}
    assert "mid-good" in rows["float32, 1 thread"] and "mid-good" not in rows["float64, 1 thread"]
    bold = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()
            if t.get_fontweight() == "bold"]
    assert set(bold) == {"fast-good"}


def test_heatmap_annotations_are_drawn_but_left_out_of_the_layout_passes(tmp_path, caught):
    """A cell's note lies inside its cell: the layout passes skip them (a tenth of the plots'
    CPU), the draw does not, and every note is still drawn within its panel."""
    run = load_run(write_run(tmp_path))
    styles = figures.palette(run.bench["impl"], roofs=["roof-numpy-fill"])
    plots.roof_heatmap(run.bench, "table", "box", tmp_path / "r.png", styles)
    fig = caught[0]
    notes = [t for ax in fig.axes for t in ax.texts]
    assert notes and not any(t.get_in_layout() for t in notes)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for t in ax.texts:
            inner = t.get_window_extent(renderer)
            assert box.x0 <= inner.x0 and inner.x1 <= box.x1, t.get_text()


def test_speedup_heatmap_leaves_out_a_dtype_its_baseline_never_ran(tmp_path, caught):
    run = load_run(write_run(tmp_path))
    bench = run.bench[~((run.bench["impl"] == "seed-numpy-stack") & (run.bench["dtype"] == "float64"))]
    plots.speedup_heatmap(bench, "table", "seed-numpy-stack", "box", tmp_path / "s.png")
    titles = [ax.get_title() for ax in caught[0].axes if ax.get_title()]
    assert titles == ["float32, 1 thread", "float32, 2 threads"]


def test_each_role_has_its_own_hue_however_many_picks_there_are():
    """Twelve recommended implementations used to wrap tab10 onto the usual choice's colour."""
    roles = {f"pick-{i}": "recommended" for i in range(12)}
    roles.update({"seed": "usual choice", "front": "Pareto"})
    styles = figures.palette(list(roles), highlight=roles)
    picks = {to_hex(styles[n]["color"]) for n in roles if n.startswith("pick-")}
    assert to_hex(styles["seed"]["color"]) not in picks
    assert to_hex(styles["front"]["color"]) not in picks | {to_hex(styles["seed"]["color"])}
    assert len({(to_hex(styles[n]["color"]), styles[n]["marker"]) for n in roles}) == len(roles)


def test_a_flagged_cell_is_drawn_apart_not_as_a_speedup(tmp_path, caught):
    run = load_run(write_run(tmp_path))
    bench = run.bench.copy()
    bench["flags"] = ""
    one = bench.index[(bench["impl"] == "fast-good") & bench["ok"]][0]
    bench.loc[one, "flags"] = "load: 1.9 cores busy with other processes"
    plots.speedup_heatmap(bench, "table", "seed-numpy-stack", "box", tmp_path / "s.png")
    texts = [t for ax in caught[0].axes for t in ax.texts]
    flagged = [t for t in texts if t.get_text() == "flagged"]
    assert len(flagged) == 1 and flagged[0].get_color() == "grey"


def test_no_frontier_label_is_struck_through_by_the_frontier(tmp_path, caught):
    """A named point just under a step of the frontier: its first free spot would sit on the
    line; the name must find a spot off it."""
    def point(name: str, seconds: float, error: float, frontier: bool) -> Point:
        return Point(name, "cpu", "paper", 1, seconds, 2.0, (), Accuracy(error, 1_000_063), None,
                     frontier=frontier)

    points = [point("front-a", 1e-3, 1e-5, True), point("front-b", 4e-3, 1e-7, True),
              point("near-the-line", 1.6e-3, 0.9e-5, False),
              point("by-the-riser", 3.3e-3, 1e-6, False)]    # left of the step down to front-b
    trade = Tradeoff("table", 8192, 1024, "float32", tuple(points))
    styles = figures.palette([p.impl for p in points],
                             highlight={p.impl: "recommended" for p in points})
    plots.frontier(trade, "box", tmp_path / "f.png", styles)
    fig = caught[0]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    boxes = [labels.extent(t, renderer) for t in ax.texts
             if t.get_text() in {p.impl for p in points}]
    frontier = next(line for line in ax.get_lines() if line.get_label() == "Pareto frontier")
    from matplotlib import cbook
    from matplotlib.path import Path as StepPath

    steps = cbook.STEP_LOOKUP_MAP["steps-post"](frontier.get_xdata(), frontier.get_ydata())
    drawn = StepPath(ax.transData.transform(np.column_stack(steps)))   # as drawn, with its riser
    assert len(boxes) == 4 and not any(labels.crosses(b, [drawn]) for b in boxes)


def test_a_panel_of_what_runs_at_no_other_thread_count_is_left_out_and_every_point_is_in_view(
        tmp_path, caught):
    """A 1-thread panel holding only the pure-Python seed compares nothing; and the usual
    choice, 1e5 times less accurate far out than the picks, stays inside the shared y axis
    (limits set panel by panel had left it off the plot)."""
    def point(name: str, threads: int, error: float) -> Point:
        return Point(name, "cpu", "paper", threads, 1e-3 * (1 + len(name) / 10), 2.0, (),
                     Accuracy(error, 1_000_063), None)

    points = [point("seed-python-loops", 1, 3e-8), point("pick", 2, 1e-7),
              point("usual", 2, 2e-2)]
    styles = figures.palette([p.impl for p in points], highlight={"usual": "usual choice"})
    plots.frontier(Tradeoff("table", 64, 1024, "float32", tuple(points)), "box",
                   tmp_path / "f.png", styles)
    panels = [ax for ax in caught[-1].axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["2 threads"]
    low, high = panels[0].get_ylim()
    assert low < 1e-7 and high > 2e-2
    shared = [*points, point("pick", 1, 1e-7)]
    plots.frontier(Tradeoff("table", 64, 1024, "float32", tuple(shared)), "box",
                   tmp_path / "g.png", styles)
    panels = [ax for ax in caught[-1].axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["1 thread", "2 threads"]
    assert all(ax.get_ylim()[0] < 3e-8 and ax.get_ylim()[1] > 2e-2 for ax in panels)


def test_a_log_axis_is_labelled_at_its_minor_ticks_only_where_they_are_round():
    """Over 11-22 ms the labels were 16, 18 and 20 ms (1.6 and 1.8 rounded to 2): now each of
    10-20 ms; over 1-20 ms only 2x and 5x a decade."""
    import matplotlib.pyplot as plt

    from harness.report.figures import log_axis
    from harness.report.plots import TIME_AXIS

    def labels(lo: float, hi: float) -> list[str]:
        fig, ax = plt.subplots()
        ax.loglog([1, 2], [lo, hi])
        log_axis(ax.yaxis, TIME_AXIS)
        fig.canvas.draw()
        found = [t.get_text() for t in ax.yaxis.get_ticklabels(which="both")
                 if t.get_text() and lo <= t.get_position()[1] <= hi]
        plt.close(fig)
        return found

    narrow = labels(11e-3, 22e-3)
    assert {"12 ms", "14 ms", "16 ms", "20 ms"} <= set(narrow) and "15 ms" not in narrow
    wide = labels(1.1e-3, 19e-3)
    assert {"2 ms", "5 ms", "10 ms"} <= set(wide) and "3 ms" not in wide and "6 ms" not in wide


def test_frontier_time_labels_are_chosen_for_the_padded_span(tmp_path, caught):
    """Two points 10.5 and 20.5 ms apart span under 3x, but the panel is padded to about 5-40 ms:
    labelled for the unpadded span, every minor tick got a label and 8, 9 and 10 ms ran into
    each other (the committed run's apply frontier, one thread)."""
    points = [Point(name, "cpu", "paper", 1, median, 2.0, (), Accuracy(3e-7, 1_000_063), None,
                    frontier=True)
              for name, median in (("slow-one", 20.5e-3), ("fast-one", 10.5e-3))]
    trade = Tradeoff("apply", 32768, 128, "float32", tuple(points))
    styles = figures.palette([p.impl for p in points], highlight={})
    plots.frontier(trade, "box", tmp_path / "f.png", styles)
    fig = caught[0]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    lo, hi = ax.get_xlim()
    shown = [t for t in ax.xaxis.get_ticklabels(which="both")
             if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert len(shown) >= 2
    assert labels.overlaps([t.get_window_extent(renderer) for t in shown]) == []
