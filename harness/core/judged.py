"""Observe implementations in their own processes, judge what they returned here.

What verify does for its case list, and conventions for its probes: each implementation,
in a child process per backend (harness.core.isolate), only hands back what it returned
(harness.core.observe); the expectations (reference, tolerance, expected result for the
inputs) are computed in this process, once per case, and the verdicts made here
(`checks.judge`). A plugin that patches numpy or the harness at import changes only the
child it runs in.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from harness.core import handover, isolate
from harness.core.checks import Check, Expectation, expect, inputs, judge
from harness.core.observe import Observation, Plan, observe_all
from harness.core.registry import Implementation


def run(impls: Sequence[Implementation], specs: Sequence[Any], timeout_s: float = 120.0,
        on_impl_done: Callable[[Implementation, list[Check]], None] | None = None,
        isolation: Optional[isolate.Isolation] = None) -> list[Check]:
    """Check every implementation on every spec. The implementations run in child processes
    when `isolation` is given (a crash costs only that implementation's remaining cases), in
    this process otherwise; either way they only hand back what they returned
    (harness.core.observe), and the verdicts are made here (checks.judge)."""
    return run_by_kind(impls, {i.kind: specs for i in impls}, timeout_s, on_impl_done, isolation)


def run_by_kind(impls: Sequence[Implementation], specs: Mapping[str, Sequence[Any]],
                timeout_s: float = 120.0,
                on_impl_done: Callable[[Implementation, list[Check]], None] | None = None,
                isolation: Optional[isolate.Isolation] = None) -> list[Check]:
    """`run`, each implementation on the specs of its kind, all kinds in one pass: a backend's
    child process (its imports: seconds for torch or TensorFlow, its compiled kernels) serves
    every kind, where a pass per kind started each backend once per kind."""
    cases = {kind: _Cases(tuple(specs[kind])) for kind in dict.fromkeys(i.kind for i in impls)}
    args = {kind: {w: cases[kind].inputs(w)
                   for w in dict.fromkeys(i.workload for i in impls if i.kind == kind)}
            for kind in cases}
    task = isolate.Task("harness.core.judged:kind_observations",
                        ({k: c.specs for k, c in cases.items()}, args, timeout_s))

    verdicts: dict[str, tuple[list, list[Check]]] = {}   # impl -> (its rows, their verdicts)

    def judged(impl: Implementation, rows: list) -> list[Check]:
        """Judged once: the verdicts shown as an implementation finished are its final ones."""
        done = verdicts.get(impl.name)
        if done is not None and done[0] is rows:
            return done[1]
        checks = cases[impl.kind].judge(impl, rows)
        verdicts[impl.name] = (rows, checks)
        return checks

    def finished(impl: Implementation, rows: list) -> None:
        if on_impl_done is not None:
            on_impl_done(impl, judged(impl, rows))

    def lost(impl: Implementation, rows: list, why: str) -> list:
        return lost_observations(len(cases[impl.kind].specs), impl, rows, why)

    by_impl = isolate.run(impls, task, lost, isolation,
                          finished if on_impl_done is not None else None)
    return [c for impl in impls for c in judged(impl, by_impl[impl.name])]


def kind_observations(impl: Implementation, specs: Mapping[str, Sequence[Any]],
                      args: Mapping[str, dict[str, tuple[tuple, ...]]],
                      timeout_s: float) -> Iterator[object]:
    """The isolated task: `impl_observations` on the specs of the implementation's kind."""
    return impl_observations(impl, specs[impl.kind], args[impl.kind], timeout_s)


def impl_observations(impl: Implementation, specs: Sequence[Any],
                      args: dict[str, tuple[tuple, ...]], timeout_s: float) -> Iterator[object]:
    """The isolated task: the implementation's Plan, then what it returned on each spec."""
    mine = args.get(impl.workload) or ((),) * len(specs)
    return observe_all(impl, list(zip(specs, mine)), timeout_s)


class _Cases:
    """The specs, each workload's inputs on them, and their expectations (computed once, here)."""

    def __init__(self, specs: tuple[Any, ...]) -> None:
        self.specs = specs
        self._inputs: dict[str, tuple[tuple, ...]] = {}
        self._expected: dict[tuple[str, int, int], Expectation] = {}

    def inputs(self, workload: str) -> tuple[tuple, ...]:
        if workload not in self._inputs:
            self._inputs[workload] = tuple(_inputs_or_none(workload, s) for s in self.specs)
        return self._inputs[workload]

    def expectation(self, workload: str, index: int, variant: int = 0) -> Expectation:
        key = (workload, index, variant)
        if key not in self._expected:
            spec = self.specs[index]
            given = handover.variant(self.inputs(workload)[index], variant)
            self._expected[key] = expect(workload, spec, given)
        return self._expected[key]

    def judge(self, impl: Implementation, rows: list) -> list[Check]:
        """Each case's verdict from the rows its process sent ([Plan, Observation, ...])."""
        seen = list(rows[1:]) if rows and isinstance(rows[0], Plan) else []
        seen += [Observation(error="its process sent no result for this case", failed_call=0)
                 ] * (len(self.specs) - len(seen))
        return [judge(impl, spec, obs, partial(self.expectation, impl.workload, i))
                for i, (spec, obs) in enumerate(zip(self.specs, seen))]


def _inputs_or_none(workload: str, spec: Any) -> tuple:
    """A workload's inputs on a spec of its kind; () for another kind's spec (a skip)."""
    try:
        return inputs(workload, spec)
    except ValueError:
        return ()


def lost_observations(n_specs: int, impl: Implementation, rows: list, why: str) -> list:
    """What a dead (or killed) process did not send: its Plan's decisions stand (unsupported
    cases stay skips); the case it died on gets `why`, the rest "not run"."""
    ahead: tuple = rows[0].ahead if rows and isinstance(rows[0], Plan) else (None,) * n_specs
    tail: list = [] if rows else [Plan(ahead)]
    done = max(0, len(rows) - 1)
    for i in range(done, n_specs):
        decided = ahead[i] if i < len(ahead) else None
        if decided is not None:
            tail.append(decided)
            continue
        reason = why if i == done else "not run: its process died on an earlier case"
        tail.append(Observation(error=reason, failed_call=0))
    return tail
