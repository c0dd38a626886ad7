"""The report draws every plot as a task of its own, at once on the cores (issue 22: the
frontiers drawn one after another in the parent were about a quarter of the report's time)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from harness.report import pipeline, plots


def test_every_plot_is_drawn_in_the_pool_frontiers_and_error_plot_included(tmp_path, monkeypatch):
    log = tmp_path / "pids"

    def drawn_by(name):
        def draw(*args, **kwargs):
            with open(log, "a") as f:
                f.write(f"{name} {os.getpid()}\n")
            return Path(name)
        return draw

    for name in ("time_vs_length", "speedup_heatmap", "roof_heatmap", "scaling", "frontier",
                 "error_vs_position"):
        monkeypatch.setattr(plots, name, drawn_by(name))
    monkeypatch.setattr(pipeline, "_fork_is_safe", lambda: True)
    monkeypatch.setattr(pipeline.cpus, "usable", lambda: 2)
    monkeypatch.setattr(pipeline, "error_by_position", lambda verify, dtype: None)
    monkeypatch.setattr(pipeline, "reference_size", lambda bench, workload: None)
    bench = pd.DataFrame({"impl": ["a", "b"], "is_roof": [False, False],
                          "workload": ["table", "forward"]})
    run = SimpleNamespace(bench=bench, verify=None, machine="m")
    trades = [SimpleNamespace(workload="table"), SimpleNamespace(workload="forward")]
    drawn = pipeline._start_drawing(run, tmp_path, {"table": "a", "forward": "b"}, trades, {})()
    assert {"frontier-table", "frontier-forward", "error", "time-table", "threads-forward"} <= set(drawn)
    pids = [line.split() for line in log.read_text().splitlines()]
    assert {name for name, _ in pids} >= {"frontier", "error_vs_position", "time_vs_length"}
    assert all(int(pid) != os.getpid() for _, pid in pids), pids


def test_the_plots_are_drawn_while_the_parent_goes_on_with_the_tables(tmp_path, monkeypatch):
    """_start_drawing returns while the plots are still being drawn (the report computes its
    tables meanwhile); its answer waits for them. A plot here waits for a file the parent writes
    only after _start_drawing returned: drawn first and waited for, it would never see it."""
    import time

    go = tmp_path / "tables-done"

    def waits(*args, **kwargs):
        deadline = time.monotonic() + 10
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return Path("saw-tables" if go.exists() else "drawn-first")

    for name in ("time_vs_length", "speedup_heatmap", "roof_heatmap", "scaling", "frontier",
                 "error_vs_position"):
        monkeypatch.setattr(plots, name, waits)
    monkeypatch.setattr(pipeline, "_fork_is_safe", lambda: True)
    monkeypatch.setattr(pipeline.cpus, "usable", lambda: 2)
    monkeypatch.setattr(pipeline, "error_by_position", lambda verify, dtype: None)
    monkeypatch.setattr(pipeline, "reference_size", lambda bench, workload: None)
    bench = pd.DataFrame({"impl": ["a"], "is_roof": [False], "workload": ["table"]})
    run = SimpleNamespace(bench=bench, verify=None, machine="m")
    collect = pipeline._start_drawing(run, tmp_path, {"table": "a"}, [], {})
    go.write_text("")
    drawn = collect()
    assert set(map(str, drawn.values())) == {"saw-tables"}, drawn
