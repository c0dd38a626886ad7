"""Under one busy core, a sweep at all cores still answers: every cell flagged for load is timed
again at the cores the load left free, and the answer says the thread count it was timed with.
The cell is a parallel one (bt-pool: its work on every thread): a single-threaded one timed at
all cores had a core to itself and is not flagged (harness.runs.flags.needed)."""

from __future__ import annotations

import pytest

import harness.cli
from harness.report import load_run
from harness.report.recommend import recommend
from harness.util import cpus
from tests.test_bench import PLUGINS, bench, by_impl, table
from tests.test_gate import busy_core  # noqa: F401  (a fixture)
from tests.test_load_flags import verify
from tests.test_report import no_plots  # noqa: F401  (a fixture)

#: Times a real run under a synthetic load: `nox -s e2e` runs it by itself.
pytestmark = pytest.mark.alone


def test_cells_flagged_at_all_cores_are_answered_at_the_cores_left(tmp_path, busy_core, no_plots,
                                                                   capsys):
    cores = cpus.usable()
    if cores < 2:
        pytest.skip("one core: there are no fewer threads to fall back to")
    proc, run = bench(tmp_path, "--plugin", str(PLUGINS / "timed.py"), "--only", "bt-pool",
                      "--only", "bt-gate", "--threads", str(cores), "--max-time", "0.05")
    assert proc.returncode == 0, proc.stderr
    everything = by_impl(table(run)).reset_index()
    alone = everything[(everything["impl"] == "bt-gate") & (everything["threads"] == cores)]
    assert list(alone["threads_ran"]) == [1]                 # one thread ran: it had its core
    if str(alone["flags"].iloc[0]).startswith("load"):
        pytest.skip(f"the machine was busier than the one synthetic busy core: "
                    f"{alone['flags'].iloc[0]}")
    rows = everything[everything["impl"] == "bt-pool"]
    at_all = rows[rows["threads"] == cores]
    assert len(at_all) == 1 and at_all["threads_ran"].iloc[0] >= cores   # the caller too
    if "load" not in str(at_all["flags"].iloc[0]):
        pytest.skip("the busy process did not take a core this cell needed")
    fewer = rows[rows["threads"] < cores]
    assert len(fewer) == 1, rows[["threads", "status", "flags"]]   # timed again, once
    assert fewer["status"].iloc[0] == "ok"
    if "load" in str(fewer["flags"].iloc[0]):
        pytest.skip(f"the machine was busier than the one synthetic busy core: "
                    f"{fewer['flags'].iloc[0]}")
    assert harness.cli.main(["report", str(run)]) == 0
    top = (run / "report.md").read_text()
    assert "1 of them answered at fewer threads instead" in top
    passed = verify("bt-pool")                          # the sweep ran without its verify
    picks = [p for p in recommend(load_run(run).bench, passed) if p.impl == "bt-pool"]
    assert [p.threads for p in picks] == [int(fewer["threads"].iloc[0])]
