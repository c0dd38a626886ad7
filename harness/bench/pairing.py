"""Time an output's contenders - its pick, a runner-up, its fastest roofs - in rotating rounds.

Why: the sweep times a pick and its roof in different worker processes, often minutes apart,
and a shared machine's memory bandwidth moves between them (on the 2-core VM the bench was
built on, two threads wrote at about 20 or about 36 GB/s, switching minutes apart), so a ratio
of two sweep medians can be off by nearly 2x either way. Here every contender of one output is
built in one process and timed a round each in turn, the order rotating from round to round,
so each round of the pick has a round of every roof within milliseconds of it; the judge
(harness.bench.paired) takes the ratio round by round. A short pause between contenders lets
the previous one's thread pool go to sleep before the next one's threads start. A first call
is paired the same way (`first_call`): each round builds its contender afresh, untimed, and
times its first call, which allocates its output: every contender's into new memory
(harness.util.heap).

This module is the worker (`python -m harness.bench.pairing CONFIG`): it reads the contenders
from CONFIG, writes a line once its implementations are loaded, then one JSON line per output
to the file CONFIG names (never to stdout, which
an implementation may print to) and holds its own clock from before any implementation is
imported. The judge holds that clock against its own (harness.bench.supervisor's rule), and
flags an output timed while other processes held cores its threads needed (the load columns,
sampled around the rounds as a sweep's worker samples them around a cell).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

_clock = time.perf_counter        # bound before any implementation could replace it

#: A round of one contender lasts about this long (calls of a large cell: one call).
ROUND_S = 0.01
#: Pause between two contenders' rounds: an OpenMP pool spins for a while after its work.
GAP_S = 0.002


@dataclass(frozen=True)
class Contender:
    """One callable timed in the rounds: its name, the call, and an in-place kernel's untimed
    reset of its inputs before each call (None otherwise)."""

    name: str
    call: Callable[[], Any]
    reset: Optional[Callable[[], None]] = None
    #: one call a round, its reset untimed before it (a first call: a fresh build each round)
    once: bool = False


def order(names: Sequence[str], round_no: int) -> list[str]:
    """Round `round_no`'s order: rotated by one each round, so over len(names) rounds every
    contender runs first once and follows each of the others as often as it precedes it."""
    k = round_no % len(names)
    return [*names[k:], *names[:k]]


def per_round(contender: Contender, calls: int, clock: Callable[[], float] = _clock,
              held: Optional[dict[str, Any]] = None) -> float:
    """Seconds per call over `calls` calls (an in-place kernel's resets untimed). Each result is
    held in `held` until the contender's next call has returned: a builder into fresh memory
    then finds the buffer its call before last let go, as in a loop of its own calls; let go at
    once, between other contenders' rounds, the allocator returned it to the system and every
    call faulted its pages in anew (a float32 rotary cache read 5x its roof so, 1.07x in the
    sweep)."""
    held = {} if held is None else held
    if contender.reset is None:
        start = clock()
        for _ in range(calls):
            held[contender.name] = contender.call()
        return (clock() - start) / calls
    total = 0.0
    for _ in range(calls):
        contender.reset()
        start = clock()
        held[contender.name] = contender.call()
        total += clock() - start
    return total / calls


def interleaved(contenders: Sequence[Contender], rounds: int, min_s: float = 0.0,
                clock: Callable[[], float] = _clock, round_s: float = ROUND_S,
                gap_s: float = GAP_S, pause: Callable[[float], None] = time.sleep
                ) -> dict[str, list[float]]:
    """Seconds per call of each contender, one value per round, in rotating order: at least
    `rounds` rounds, more until the timed calls of all of them add up to `min_s` (the judge
    checks a clock only over a second or more)."""
    by_name = {c.name: c for c in contenders}
    calls = {c.name: _calls_per_round(c, round_s, clock) for c in contenders}
    out: dict[str, list[float]] = {c.name: [] for c in contenders}
    held: dict[str, Any] = {}
    timed, round_no = 0.0, 0
    while round_no < rounds or timed < min_s:
        for name in order(list(by_name), round_no):
            pause(gap_s)
            value = per_round(by_name[name], calls[name], clock, held)
            out[name].append(value)
            timed += value * calls[name]
        round_no += 1
    return out


def _calls_per_round(contender: Contender, round_s: float, clock: Callable[[], float]) -> int:
    """How many calls make a round of about `round_s` (one warm-up call, one timed); one for a
    contender reset before every call (its reset, a copy of its inputs, costs more than it)."""
    if contender.once or contender.reset is not None:
        return 1
    per_round(contender, 1, clock)
    once = per_round(contender, 1, clock)
    return max(1, min(1000, math.ceil(round_s / once))) if once > 0 else 1000


def ratios(rounds: dict[str, list[float]], pick: str, roofs: Iterable[str]) -> list[float]:
    """Round by round: the pick's time over the fastest roof's in the same round."""
    roofs = list(roofs)
    return [rounds[pick][i] / min(rounds[r][i] for r in roofs)
            for i in range(min(len(rounds[pick]), *(len(rounds[r]) for r in roofs)))]


class Builder:
    """Builds a cell's timed callable as the sweep does (harness.bench.measure): the factory
    untimed, a call-time implementation's inputs handed over, an in-place kernel's reset. The
    inputs are drawn and converted once; `build` may run again (a first call a round)."""

    def __init__(self, cell_data: dict[str, Any]) -> None:
        from harness.bench import inputs
        from harness.bench.cells import Cell
        from harness.bench.measure import Hands
        from harness.bench.roofs import ROOF_REGISTRY
        from harness.core.registry import REGISTRY

        self.cell = Cell.from_dict(cell_data)
        self.impl = (ROOF_REGISTRY if self.cell.is_roof else REGISTRY).get(self.cell.impl)
        self.spec = self.cell.spec()
        self.args = inputs.WORKER_INPUTS.arguments(self.cell, self.spec)
        at_call = bool(self.args) and not self.cell.is_roof and self.impl.inputs_at_call
        self.hands = Hands(self.impl, self.spec, self.args) if at_call else None

    def build(self) -> tuple[Callable[[], Any], Optional[Callable[[], None]]]:
        """(what is timed, an in-place kernel's reset or None)."""
        from harness.bench.measure import timed_call

        built = (self.impl.build(self.spec) if self.hands is not None
                 else self.impl.build(self.spec, *self.args))
        fn, fresh, wrong = timed_call(self.impl, built, self.hands)
        if wrong:
            raise ValueError(wrong)
        return fn, fresh


def contender(cell_data: dict[str, Any]) -> Contender:
    """A contender built as the sweep builds its cell; its first result is poisoned and held
    while a second call must come back fresh."""
    from harness.bench import validity
    from harness.core.checks import poison

    builder = Builder(cell_data)
    fn, fresh = builder.build()
    if fresh is not None:
        fresh()
    first = fn()
    problem = validity.output_problem(first, builder.cell)
    if problem is None:
        poisoned = poison(first)
        if fresh is not None:
            fresh()
        problem = validity.stale_problem(first, fn(), poisoned, builder.cell)
    if problem:
        raise ValueError(problem)
    return Contender(builder.cell.impl, fn, fresh)


def first_call(cell_data: dict[str, Any]) -> Contender:
    """A contender whose every round is a first call: built afresh before it (untimed; the
    inputs converted once), so the call allocates its output (JIT compiled once, by the first
    build's call), malloc's free pages handed back after the build (`heap.release`), so
    that the call's output and temporaries are new memory. Its result is checked once."""
    from harness.bench import validity
    from harness.util import heap

    builder = Builder(cell_data)
    holder = [builder.build()[0]]
    problem = validity.output_problem(holder[0](), builder.cell)
    if problem:
        raise ValueError(problem)

    def rebuild() -> None:
        holder[0] = builder.build()[0]
        heap.release()

    return Contender(builder.cell.impl, lambda: holder[0](), rebuild, once=True)


def run(config: dict[str, Any], write: Callable[[dict[str, Any]], None]) -> None:
    """Each output of `config["outputs"]`: build its contenders, time them, `write` a line."""
    from harness import implementations
    from harness.bench import contention, threads
    from harness.bench.measure import error_reason

    implementations(config.get("plugins", []))
    write({"ready": True})              # the judge's clock starts here, after the imports
    pinned: set[str] = set()
    began = _clock()
    for output in config["outputs"]:
        start = _clock()
        line: dict[str, Any] = {"id": output["id"]}
        if start - began > float(config.get("budget_s", math.inf)):
            write({**line, "status": "skip", "own_s": 0.0,
                   "reason": f"the step's budget of {config['budget_s']:g} s was used up"})
            continue
        try:
            for cell in output["cells"]:
                if cell["backend"] not in pinned:
                    threads.pin(cell["backend"], int(config["threads"]))
                    pinned.add(cell["backend"])
            built = [contender(cell) for cell in output["cells"]]
            before = contention.sample()
            line["rounds_s"] = interleaved(built, int(config["rounds"]), float(config["min_s"]))
            if output.get("first"):
                del built
                firsts = [first_call(cell) for cell in output["first"]]
                line["first_s"] = interleaved(firsts, int(config["first_rounds"]))
            line.update(status="ok", **contention.columns(before, contention.sample()))
        except Exception as exc:           # the judge records it; the other outputs go on
            line.update(status="error", reason=error_reason("roofs", exc))
        line["own_s"] = _clock() - start
        write(line)


def main(argv: Sequence[str]) -> int:
    from harness.util import lifeline

    lifeline.watch()                    # dies with the judge
    config = json.loads(Path(argv[0]).read_text())
    results = Path(config["results"])

    def write(line: dict[str, Any]) -> None:
        with open(results, "a") as f:
            f.write(json.dumps(line) + "\n")

    run(config, write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
