"""The report's roof table: the binding limit per workload and dtype, and the best that passes."""

from __future__ import annotations

import pandas as pd

from harness.bench.cells import Cell, Outcome, row
from harness.report import bounds
from harness.runs import results


def _cell(impl: str, threads: int, is_roof: bool = False, length: int = 64) -> Cell:
    return Cell(impl, "numpy", "cpu", "timestep", "adm", length, 64, "float32", threads,
                is_roof=is_roof, kind="timestep")


def _bench() -> pd.DataFrame:
    times = {("roof-recycled-fill-timestep", True): 1e-3, ("roof-sincos-timestep", True): 8e-3,
             ("roof-numpy-fill-timestep", True): 3e-3, ("roof-torch-fill-timestep", True): 5e-3,
             ("fast-but-wrong", False): 2e-3, ("timestep-numba", False): 4e-3}
    #: first calls: the recycled and the compute roofs' are no allocate-and-fill, so never the yardstick
    first = {"roof-recycled-fill-timestep": 1e-4, "roof-sincos-timestep": 1e-4,
             "roof-numpy-fill-timestep": 2e-2, "roof-torch-fill-timestep": 1e-2, "timestep-numba": 1.5e-2}
    rows = [row(_cell(name, threads, roof), Outcome("ok", median_s=t / threads, iqr_s=t / 1e3,
                                                    first_call_s=first.get(name, 1.0)))
            for (name, roof), t in times.items() for threads in (1, 2)]
    rows.append(row(_cell("timestep-numba", 2, length=8), Outcome("ok", median_s=1e-6, iqr_s=1e-9)))
    return results.tidy(rows, "run", "machine")


def test_the_table_names_the_binding_roof_and_the_fastest_that_passes():
    verify = pd.DataFrame({"impl": ["fast-but-wrong", "timestep-numba"], "dtype": ["float32"] * 2,
                           "status": ["fail", "pass"]})
    frame = bounds.table(_bench(), verify)
    assert len(frame) == 1
    line = frame.iloc[0]
    assert line["bound"] == "compute" and line["best (passes verify)"] == "timestep-numba"
    assert line["size"] == "64 x 64"                      # the largest size, not the fastest cell
    assert line["x roof, 2 threads"] == "0.5x" and line["x roof, 1 thread"] == "0.5x"
    assert line["fastest first call"] == "timestep-numba"
    assert line["first call x fresh fill"] == "1.5x"       # over the fastest fresh roof's first call
    assert "compute" in bounds.section(_bench(), verify)


def test_the_one_thread_column_names_the_best_at_one_thread_where_it_is_another():
    """A pick writing fresh memory read 5.6x at one thread, where its recycled variant was
    nearer: the column gives the best that passes at one thread, and names it."""
    verify = pd.DataFrame({"impl": ["timestep-numba", "one-thread-best"], "dtype": ["float32"] * 2,
                           "status": ["pass", "pass"]})
    bench = _bench()
    extra = [row(_cell("one-thread-best", 1), Outcome("ok", median_s=2e-3, iqr_s=2e-6)),
             row(_cell("one-thread-best", 2), Outcome("ok", median_s=9e-3, iqr_s=9e-6))]
    bench = results.tidy(bench.to_dict("records") + extra, "run", "machine")
    line = bounds.table(bench, verify).iloc[0]
    assert line["best (passes verify)"] == "timestep-numba"
    assert line["x roof, 1 thread"] == "0.25x (one-thread-best)"


def test_the_first_call_column_names_the_fastest_exact_first_call_into_fresh_memory():
    """Not the best by median: the fastest first call among what passes verify, leaving out
    what fails it and what rotates in place (it allocates nothing)."""
    extra = {"quick-start": (6e-3, 1.2e-2), "fast-but-wrong": (2e-3, 1e-3),
             "rotary-apply-inplace": (5e-3, 1e-5)}
    bench = _bench()
    rows = [row(_cell(name, 2), Outcome("ok", median_s=t, iqr_s=t / 1e3, first_call_s=first))
            for name, (t, first) in extra.items()]
    bench = pd.concat([bench[bench["impl"] != "fast-but-wrong"],
                       results.tidy(rows, "run", "machine")], ignore_index=True)
    bench = results.tidy(bench.to_dict("records"), "run", "machine")
    verify = pd.DataFrame({"impl": ["fast-but-wrong", "timestep-numba", "quick-start",
                                    "rotary-apply-inplace"], "dtype": ["float32"] * 4,
                           "status": ["fail", "pass", "pass", "pass"]})
    line = bounds.table(bench, verify).iloc[0]
    assert line["best (passes verify)"] == "timestep-numba"
    assert line["fastest first call"] == "quick-start"
    assert line["first call x fresh fill"] == "1.2x"
