"""Measure one cell in a worker: untimed build, the first call apart, peak memory, pytest-benchmark.

Order matters. The factory's setup (imports, JIT, tracing, device transfer) is
never timed; what it left reachable from the callable is measured before any
call (a table builder keeping a table's worth is a lookup: harness.bench.validity,
confirmed by a longer build only after the first call, which it could warm).
The first call (compilation on first use, caches) is timed once on its own as
`first_call_s` - perf_counter around a single call, not a benchmark timer - and
its result checked (shape, dtype, finite), then poisoned and held - with any
table-sized array the callable kept from that call (harness.bench.validity: a
builder that computes once and hands back copies) - while one warm call, which
sizes the rounds of a cold-cache cell, must return a fresh, finite result: a
cell that fails either check is `invalid` and never timed. Peak memory needs a
counter that slows the call, so it gets its own call too, once both results
are let go. On the CPU, untimed calls follow until the allocator has settled
(harness.bench.settle), the last one sizing the rounds; only then does
pytest-benchmark calibrate and time rounds of the warm callable, in the cell's
mode (harness.bench.modes: on a device, every call is followed by a sync, or
replayed from a CUDA graph); what a call under
its timer returned must hold the first call's values, or the cell is `invalid`
after all. A roof (harness.bench.roofs: the harness's own yardstick, never judged against
the reference) has its first and warm results checked the same way, but no copy of its values
is kept and its timed result is not compared: those copies and comparisons guard against an
implementation that behaves differently when timed, and cost a roof cell a full pass or two
over its output (about a third of the untimed work of a large roof cell). The machine's
load is sampled after setup and after the rounds (harness.bench.contention).
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Optional

from harness.bench import contention, fingerprint, inputs, modes, peak, validity
from harness.bench.cells import Cell, Outcome, thin
from harness.bench.settings import Timing
from harness.bench.settle import settle
from harness.core import handover, inplace
from harness.core.checks import poison
from harness.core.registry import Implementation
from harness.util import heap

MAX_REASON = 300


def error_reason(stage: str, exc: BaseException) -> str:
    """One line for the CSV: where it failed and the exception's message."""
    text = f"{stage}: {type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def measure(impl: Implementation, cell: Cell, benchmark: Any, thread_settings: str,
            timing: Timing = Timing(), meter: contention.Meter = contention.sample,
            on_timing: Callable[[str], None] = lambda phase: None) -> Outcome:
    """Time `impl` on `cell` with the pytest-benchmark fixture; an exception becomes an error,
    an invalid result or a lookup (harness.bench.validity) an `invalid` row, untimed. `meter`
    samples the machine's load after setup and after the timed rounds (harness.bench.contention).
    `on_timing` announces "timing" as the timed rounds start and "timed" as they end, so that
    the supervisor's own clock spans the rounds alone (harness.bench.supervisor)."""
    stage = "build"
    samples: list[contention.Sample] = []
    done: dict[str, Any] = {"thread_settings": thread_settings}
    try:
        spec = cell.spec()
        args = inputs.WORKER_INPUTS.arguments(cell, spec)
        at_call = bool(args) and not cell.is_roof and impl.inputs_at_call
        start = time.perf_counter()
        built = impl.build(spec) if at_call else impl.build(spec, *args)
        done["build_s"] = time.perf_counter() - start
        stage = "setup check"
        hands = Hands(impl, spec, args) if at_call else None
        fn, fresh, wrong = timed_call(impl, built, hands)
        if wrong:
            return _outcome("invalid", wrong, samples, meter, done)
        done["inputs_at"] = "call" if at_call else "build" if args and not cell.is_roof else ""
        kept = built if at_call else fn   # what it keeps, not the inputs the harness holds
        done["retains_bytes"] = validity.retained_bytes(kept)      # before any call
        before = validity.reachable_ids(kept)
        call = modes.synced(fn, cell.device, cell.backend)
        samples.append(meter())
        stage = "first call"
        _refresh(fresh, cell)
        start = time.perf_counter()
        first = call()
        done["first_call_s"] = time.perf_counter() - start
        stage = "result check"
        problem, values = ((validity.output_problem(first, cell), None) if cell.is_roof
                           else validity.first_result(first, cell))
        if problem is None:       # poisoned and still held: the warm call must compute afresh
            seed = fingerprint.worker_seed()
            sampled = [fingerprint.sample(values, seed)]
            poisoned = poison(first)
            kept = sum(poison(a) for a in validity.kept_since(built if at_call else fn, cell,
                                                               before))
            stage = "warm call"
            _refresh(fresh, cell)
            start = time.perf_counter()
            second = call()
            warm_s = time.perf_counter() - start
            stage = "result check"
            problem = validity.stale_problem(first, second, poisoned, cell)
            if problem and kept:
                problem += (f"; {kept} table-sized array(s) it kept from its first call were "
                            "poisoned too: it hands back a copy of its first answer")
            del second
        del first
        stage = "setup check"     # after the first call: its confirming build may warm caches
        problem = problem or validity.lookup_reason(impl, cell, done["retains_bytes"])
        if problem:
            return _outcome("invalid", problem, samples, meter, done)
        stage = "peak-memory call"
        if cell.device == "cpu":
            heap.release()   # blocks malloc holds would be reused unseen by a resident-memory meter
        done["peak_bytes"], done["peak_method"] = peak.of_call(call, cell.backend, cell.device)
        if cell.device == "cpu" and warm_s < timing.max_time:   # a longer call is timed as is
            stage = "settling calls"
            warm_s = settle(call, (lambda: _refresh(fresh, cell)) if fresh else None,
                            timing.max_time)
        stage = f"{cell.mode} set-up" if cell.mode else "set-up"
        rounds = modes.rounds_for(cell.mode, fn, cell.backend, cell.device, warm_s,
                                  timing.max_time, timing.min_rounds, fresh)
        stage = "timed calls"
        benchmark.extra_info.update(cell.as_dict(), key=cell.key, build_s=done["build_s"],
                                    first_call_s=done["first_call_s"],
                                    peak_bytes=done["peak_bytes"], peak_method=done["peak_method"],
                                    thread_settings=thread_settings,
                                    calls_per_round=rounds.calls)
        timer = modes.clock(cell.device)      # the cell's timer, as pytest-benchmark's
        on_timing("timing")                   # the supervisor starts its own clock
        start = timer()
        timed = rounds.run(benchmark)
        done["timer_s"] = timer() - start
        on_timing("timed")                    # and stops it: what follows is not timed
        stage = "timed result check"
        wrong, timed_values = ((None, None) if cell.mode == "graph" or cell.is_roof else
                               validity.timed_problem(timed, values, cell))
        del timed
        if wrong:
            return _outcome("invalid", wrong, samples, meter, done)
        # read in place where they can be: sampled now, before another call may reuse the buffer
        done["sampled"] = tuple(s for s in (*sampled, fingerprint.sample(timed_values, seed)) if s)
        stage = "inputs changed"
        if cell.mode != "graph" and hands is not None:   # other inputs, changed untimed
            hands.negate(fresh is not None)
            done["moved"] = fingerprint.sample(validity.first_values(call(), cell), seed)
        elif cell.mode != "graph" and not cell.is_roof and handover.negate_in_place(args):
            _refresh(fresh, cell)     # one more call: its result must follow its inputs
            done["moved"] = fingerprint.sample(validity.first_values(call(), cell), seed)
    except modes.NotCapturable as exc:
        return _outcome("skip", error_reason("not capturable as a CUDA graph", exc), samples,
                        meter, done)
    except Exception as exc:
        traceback.print_exc()   # into the worker's log; the row gets one line
        return _outcome("error", error_reason(stage, exc), samples, meter, done)
    stats, per = benchmark.stats.stats, rounds.calls     # a graph replays `per` calls
    return _outcome("ok", "", samples, meter,
                    dict(done, median_s=stats.median / per, iqr_s=stats.iqr / per,
                         min_s=stats.min / per, mean_s=stats.mean / per,
                         stddev_s=stats.stddev / per, rounds=stats.rounds,
                         samples_s=thin(v / per for v in stats.data)))


class Hands:
    """A call-time implementation's inputs (harness.core.handover), converted to its backend
    outside the timed region: the same set every round, or for an in-place kernel a fresh one
    before each round (`fresh`)."""

    def __init__(self, impl: Implementation, spec: Any, args: tuple) -> None:
        self.impl, self.spec, self.args = impl, spec, args
        self.variant = 0
        self.handed = self._convert()

    def _convert(self) -> tuple:
        return handover.convert(handover.variant(self.args, self.variant), self.impl.backend,
                                self.spec.dtype, self.impl.device)

    def fresh(self) -> None:
        self.handed = self._convert()

    def change(self, variant: int) -> None:
        """Hand over another input set from now on."""
        self.variant = variant
        self.fresh()

    def negate(self, in_place_kernel: bool) -> None:
        """From now on the negated inputs: the same objects negated where they lie, so a cache
        keyed on their identity hands back the old answer (a fresh set where they are immutable,
        and for an in-place kernel, which rotated them: it gets a fresh set every round)."""
        if in_place_kernel or not handover.negate_handed(self.handed, self.args):
            self.change(handover.NEGATED)

    def calling(self, fn: Callable[..., Any]) -> Callable[[], Any]:
        return lambda: fn(*self.handed)


def timed_call(impl: Implementation, built: Any, hands: Optional[Hands] = None
                ) -> tuple[Any, Any, str]:
    """(what is timed, the untimed reset before each call or None, "") from what the factory
    returned; ("", None, why) when that does not match the in-place declaration."""
    in_place = inplace.declared_in_place(impl.forms_declared)
    _, wrong = inplace.calling(built, in_place, hands is not None)
    if wrong:
        return None, None, wrong
    if hands is not None:
        return hands.calling(built), hands.fresh if in_place else None, ""
    return (built.call, built.reset, "") if in_place else (built, None, "")


def _refresh(fresh: Any, cell: Cell) -> None:
    """An in-place kernel's fresh inputs, in place before the call (untimed)."""
    if fresh is not None:
        modes.synced(fresh, cell.device, cell.backend)()


def _outcome(status: str, reason: str, samples: list[contention.Sample], meter: contention.Meter,
             fields: dict[str, Any]) -> Outcome:
    """The Outcome, with the load columns from the sample after setup and one taken now."""
    before = samples[0] if samples else None
    after = meter() if before is not None else None
    return Outcome(status, reason, **fields, **contention.columns(before, after))
