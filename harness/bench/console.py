"""What bench says while it runs: one live line on a terminal, a few plain lines elsewhere.

On a terminal, a tqdm bar: cells done of the total (re-measured cells
included), the step running (sweep, a post-step), elapsed time and an ETA
over the whole run, the sweep *and* the post-steps after it. Without one (CI,
a pipe) the same facts as a few plain lines, at each quarter of the cells and
at each post-step, with no control characters. A line per cell goes to the
run's log file always, and to the screen with --verbose.

The ETA adds what is left of the sweep (the cells left, each weighed by its
size, times the median wall time per weight of the last cells,
harness.bench.progress) and what is left of the post-steps: each step's time
in the newest earlier run under the same --out with the same --quick
(post.json), or POST_GUESS_S where there is none.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Optional, Sequence

from harness.bench.progress import Progress, duration

#: Seconds a post-step is guessed to take when no earlier run says (quick, full).
POST_GUESS_S = {"verify": (40.0, 120.0), "conventions": (30.0, 60.0), "precision": (8.0, 20.0),
                "roofs": (20.0, 40.0), "report": (15.0, 40.0)}
#: Without a terminal: a plain line each time this share of the cells is done.
PLAIN_EVERY = 0.25


def post_estimate(out: Path, quick: bool, steps: Sequence[str]) -> dict[str, float]:
    """Seconds each of `steps` is expected to take, from the newest earlier run like this one."""
    guess = {s: POST_GUESS_S.get(s, (10.0, 30.0))[0 if quick else 1] for s in steps}
    for record in sorted(Path(out).glob("*/post.json"), key=lambda p: p.stat().st_mtime,
                         reverse=True):
        if _was_quick(record.parent) != quick:
            continue
        try:
            seen = {s["name"]: float(s["seconds"]) for s in json.loads(record.read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return {s: seen.get(s, guess[s]) for s in steps}
    return guess


def _was_quick(run_dir: Path) -> Optional[bool]:
    try:
        return "--quick" in json.loads((run_dir / "env.json").read_text()).get("argv", [])
    except (OSError, ValueError, AttributeError):
        return None


class Console:
    """The bench run's screen and log: cells, post-steps, lines for everyone."""

    def __init__(self, cells: int, post_s: Mapping[str, float], log: Optional[Path] = None,
                 verbose: bool = False, stream: IO[str] = sys.stdout,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.progress = Progress(cells, clock)
        self.post_s = dict(post_s)
        self.verbose, self.stream, self.clock = verbose, stream, clock
        self.log = open(log, "a") if log is not None else None
        self.started = clock()
        self.step: Optional[str] = None
        self.step_started = 0.0
        self.next_plain = PLAIN_EVERY
        self.live = _is_terminal(stream)
        self.bar = _bar(cells, stream) if self.live else None

    # -- what happens ------------------------------------------------------------------

    def cell(self, row: Mapping[str, Any]) -> None:
        """One finished cell: its line to the log (and screen with --verbose), the bar moves."""
        line = self.progress.line(dict(row))
        self._log(line)
        if self.verbose:
            self.say(line, log=False)
        if self.bar is not None:
            self.bar.update(1)
            self._refresh()
        elif self.progress.total and self.progress.done >= self.next_plain * self.progress.total:
            self.say(f"bench: {self.progress.done} of {self.progress.total} cells, "
                     f"{self.elapsed()} elapsed, {self.eta()}")
            while self.next_plain * self.progress.total <= self.progress.done:
                self.next_plain += PLAIN_EVERY

    def more_cells(self, n: int, cells: Sequence[Any] = ()) -> None:
        """`n` cells added to the run (planned, or measured again for load); `cells`, when
        given, weigh each in the ETA by its size (harness.bench.progress)."""
        self.progress.total += n
        self.progress.expect(cells)
        if self.bar is not None:
            self.bar.total = self.progress.total
            self._refresh()

    def begin(self, step: str) -> None:
        """A post-step starts."""
        self.step, self.step_started = step, self.clock()
        if self.bar is not None:
            self._refresh()
        else:
            self.say(f"post: {step} ... ({self.eta()})")

    def end(self, step: str, text: str) -> None:
        """A post-step ended: `text` says how."""
        self.post_s.pop(step, None)
        self.step = None
        self.say(text)

    def tick(self) -> None:
        """Time passed (a post-step still running): the live line's clock moves."""
        if self.bar is not None:
            self._refresh()

    def say(self, text: str, log: bool = True, screen: bool = True) -> None:
        """A line for everyone (above the live line); `screen` False: for the log alone."""
        if log:
            self._log(text)
        if not screen:
            return
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.log is not None:
            self.log.close()
            self.log = None

    # -- numbers -----------------------------------------------------------------------

    def elapsed(self) -> str:
        return duration(self.clock() - self.started)

    def left_s(self) -> Optional[float]:
        """Seconds left over the sweep and the post-steps (None until the sweep can tell)."""
        sweep = self.progress.left_s()
        if sweep is None:
            return None
        post = sum(self.post_s.values())
        if self.step is not None:
            post -= min(self.clock() - self.step_started, self.post_s.get(self.step, 0.0))
        return sweep + post

    def eta(self) -> str:
        left = self.left_s()
        return "ETA ..." if left is None else f"ETA {duration(left)}"

    def _refresh(self) -> None:
        what = f"post: {self.step}" if self.step else "sweep"
        self.bar.set_description_str(what, refresh=False)
        self.bar.set_postfix_str(f"{self.elapsed()} elapsed, {self.eta()}", refresh=False)
        self.bar.refresh()

    def _log(self, text: str) -> None:
        if self.log is not None:
            self.log.write(text + "\n")
            self.log.flush()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _bar(cells: int, stream: IO[str]) -> Any:
    from tqdm import tqdm

    return tqdm(total=cells, file=stream, unit="cell", dynamic_ncols=True, leave=False,
                bar_format="{desc} {bar} {n_fmt}/{total_fmt} cells, {postfix}")
