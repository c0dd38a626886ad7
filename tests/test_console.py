"""bench's screen: a live line on a terminal, a few plain lines elsewhere, every cell in the log,
and an ETA over the sweep and the post-steps."""

from __future__ import annotations

import io
import json

from harness.bench import console
from harness.bench.console import Console
from tests.test_progress_and_problems import row


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_cells(screen: Console, clock: Clock, n: int, gap_s: float = 1.0) -> None:
    for i in range(n):
        clock.now += gap_s
        screen.cell(row(i))


def test_without_a_terminal_a_few_plain_lines_and_every_cell_in_the_log(tmp_path):
    out, clock, log = io.StringIO(), Clock(), tmp_path / "bench.log"
    screen = Console(100, {"verify": 30.0}, log=log, stream=out, clock=clock)
    run_cells(screen, clock, 100)
    screen.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[0].startswith("bench: 25 of 100 cells")
    assert not any(c in out.getvalue() for c in "\r\x1b")          # no control characters
    assert sum(line.startswith("[") for line in log.read_text().splitlines()) == 100   # each cell


def test_verbose_puts_every_cell_on_the_screen_too():
    out, clock = io.StringIO(), Clock()
    screen = Console(8, {}, stream=out, clock=clock, verbose=True)
    run_cells(screen, clock, 8)
    assert sum("impl" in line for line in out.getvalue().splitlines()) == 8


def test_the_eta_covers_the_cells_left_and_the_post_steps():
    clock = Clock()
    screen = Console(10, {"verify": 30.0, "report": 10.0}, stream=io.StringIO(), clock=clock)
    run_cells(screen, clock, 5, gap_s=2.0)
    assert screen.left_s() == 5 * 2.0 + 40.0
    run_cells(screen, clock, 5, gap_s=2.0)
    screen.begin("verify")
    clock.now += 12.0
    assert screen.left_s() == 18.0 + 10.0
    screen.end("verify", "post: verify ok in 12 s")
    assert screen.left_s() == 10.0


def test_on_a_terminal_one_live_line_shows_the_step_running():
    out, clock = Terminal(), Clock()
    screen = Console(4, {"verify": 20.0}, stream=out, clock=clock)
    run_cells(screen, clock, 4)
    screen.begin("verify")
    screen.tick()
    text = out.getvalue()
    assert "\r" in text and "post: verify" in text and "4/4 cells" in text
    screen.close()


def test_post_steps_are_estimated_from_the_newest_earlier_run_like_this_one(tmp_path):
    steps = ["verify", "report"]
    assert console.post_estimate(tmp_path, True, steps) == {
        s: console.POST_GUESS_S[s][0] for s in steps}
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "env.json").write_text(json.dumps({"argv": ["bench", "--quick"]}))
    (run / "post.json").write_text(json.dumps([{"name": "verify", "seconds": 7.5},
                                               {"name": "report", "seconds": 2.0}]))
    assert console.post_estimate(tmp_path, True, steps) == {"verify": 7.5, "report": 2.0}
    assert console.post_estimate(tmp_path, False, steps)["verify"] == console.POST_GUESS_S[
        "verify"][1]                                           # a full run is not like a quick one


def test_the_checks_after_a_sweep_run_at_once_and_the_eta_waits_for_the_longest():
    import threading

    from harness.bench import post

    verbs = ("verify", "conventions", "precision")
    all_started = threading.Barrier(len(verbs), timeout=10)   # breaks unless all run at once
    ticks: list[int] = []

    def run(verb, tick):
        all_started.wait()
        return post.Step(verb, "ok", "", 0.0)

    steps = post._run_together(verbs, run, lambda: ticks.append(1))
    assert [s.name for s in steps] == list(verbs) and all(s.status == "ok" for s in steps)
    estimate = post.estimate_together({"verify": 40.0, "conventions": 30.0, "precision": 8.0,
                                       "report": 15.0}, verbs)
    assert estimate == {"verify + conventions + precision": 40.0, "report": 15.0}
