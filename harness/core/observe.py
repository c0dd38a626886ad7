"""Call an implementation and write down what it returned, as plain data; judge nothing.

This is the half of a check that runs where the implementation runs (an isolated
child of `verify`, or the caller's process for `check_callable`): build, call,
poison the result in place, call again, let both results go, call a third
time, and copy each result to NumPy as it came back. The other half, what the
copies mean (harness.core.checks.judge), runs in a process that never imports
an implementation: nothing the implementation patches (numpy.sin, the harness's
own comparison) can reach a verdict, because no verdict is made here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from harness import backends
from harness.core import inplace, kinds
from harness.core.convert import dtype_name, to_numpy
from harness.util.deadline import CallTimeout, call_with_deadline


@dataclass(frozen=True)
class Returned:
    """One result as the judge sees it: a copy of its values and the dtype it had, or why it is
    not an array; a tuple or list result is its parts."""

    dtype: str = ""
    array: Optional[np.ndarray] = None
    problem: str = ""                            # not an array: None, not array-like
    parts: Optional[tuple["Returned", ...]] = None   # a tuple/list result


@dataclass(frozen=True)
class Observation:
    """What one implementation did on one spec, call by call (the judge decides what it means)."""

    skip: str = ""                               # unavailable or unsupported: why
    error: str = ""                              # the build or a call raised or hung: why
    failed_call: int = -1                        # which: 0 the build, 1.. the calls
    results: tuple[Returned, ...] = ()           # the calls' results, in order
    poisoned: tuple[bool, ...] = ()              # whether each result could be filled with NaN
    same_buffer: bool = False                    # the second result is the first's memory
    seconds: float = 0.0
    #: what its factory returned contradicts its in-place declaration: why
    mismatch: str = ""
    #: the inputs an out-of-place implementation wrote into during its first call
    wrote_inputs: tuple[str, ...] = ()


def snapshot(out: Any) -> Returned:
    """A copy of `out`'s values as NumPy with its dtype's name (the copy survives poisoning)."""
    if isinstance(out, (tuple, list)):
        return Returned(dtype=type(out).__name__, parts=tuple(snapshot(p) for p in out))
    if out is None:
        return Returned(problem="returned None, not an array")
    try:
        arr = np.array(to_numpy(out), copy=True)
    except Exception as exc:
        return Returned(problem=f"result of type {type(out).__name__} is not array-like: {exc}")
    return Returned(dtype=dtype_name(out), array=arr)


def poison(out: Any) -> bool:
    """Fill the returned buffer with NaN in place (by its backend's adapter); False when it
    cannot be poisoned (immutable TF and JAX tensors, read-only views, unknown types). A tuple
    result is poisoned only if every part is."""
    if isinstance(out, (tuple, list)):
        return bool(out) and all([poison(part) for part in out])
    owner = backends.owner(out)
    return bool(owner is not None and owner.poison is not None and owner.poison(out))


def same_buffer(first: Any, second: Any) -> bool:
    """The same object, or (NumPy) a view of the same memory: what poisoning could not test.
    Tuple results share a buffer when any part of one shares it with any part of the other
    (every pair: a part moved or added is not missed)."""
    if second is first:
        return True
    if isinstance(first, (tuple, list)) or isinstance(second, (tuple, list)):
        firsts = first if isinstance(first, (tuple, list)) else (first,)
        seconds = second if isinstance(second, (tuple, list)) else (second,)
        return any(same_buffer(a, b) for a in firsts for b in seconds)
    return (isinstance(first, np.ndarray) and isinstance(second, np.ndarray)
            and np.shares_memory(first, second))


@dataclass(frozen=True)
class Plan:
    """What an implementation's own `supports` (and availability) decided before any call, one
    entry per case: the skip or error Observation, or None for a case to run."""

    ahead: tuple[Optional[Observation], ...]


def plan(impl: Any, specs: Sequence[Any], timeout_s: float) -> Plan:
    """Ask `impl` whether it runs each spec, each question under the deadline; after a timeout
    the rest are not asked."""
    ahead: list[Optional[Observation]] = []
    hung = False
    for spec in specs:
        if hung:
            ahead.append(Observation(error="not run: an earlier case timed out", failed_call=0))
            continue
        skip, why = guarded(lambda: impl.unavailable_reason() or impl.supports(spec), timeout_s)
        hung = why.startswith("timeout")
        ahead.append(Observation(error=f"supports: {why}", failed_call=0) if why else
                     Observation(skip=str(skip)) if skip else None)
    return Plan(tuple(ahead))


def observe(impl: Any, spec: Any, args: tuple, timeout_s: float) -> Observation:
    """Build, call, poison, call again, let go, call a third time; every result copied.
    Never raises for the implementation's faults (SystemExit included)."""
    start = time.perf_counter()
    given = args
    args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)   # its own inputs
    built, why = guarded(lambda: impl.build(spec, *args), timeout_s)
    if why:
        return Observation(error=why, failed_call=0, seconds=time.perf_counter() - start)
    in_place = inplace.declared_in_place(getattr(impl, "forms_declared", None))
    fn, mismatch = inplace.calling(built, in_place)
    if mismatch:
        return Observation(mismatch=mismatch, seconds=time.perf_counter() - start)
    wrote: tuple[str, ...] = ()
    results: list[Returned] = []
    poisoned: list[bool] = []
    held: list[Any] = []
    same = False
    for call in (1, 2, 3):
        if call == 3 and not all(poisoned):      # nothing to learn from reused memory
            break
        if call == 3:
            held.clear()                         # let both poisoned results go
            out = None
        out, why = guarded(fn, timeout_s)
        if why:
            return Observation(error=why, failed_call=call, results=tuple(results),
                               poisoned=tuple(poisoned), same_buffer=same,
                               seconds=time.perf_counter() - start)
        results.append(snapshot(out))
        if call == 1 and not in_place:
            wrote = inplace.written(given, args, _input_names(impl, spec))
        if call == 2 and not poisoned[0]:
            same = same_buffer(held[0], out)
        poisoned.append(call < 3 and (call == 1 or poisoned[0]) and poison(out))
        held.append(out)
    return Observation(results=tuple(results), poisoned=tuple(poisoned), same_buffer=same,
                       seconds=time.perf_counter() - start, wrote_inputs=wrote)


def _input_names(impl: Any, spec: Any) -> tuple[str, ...]:
    return kinds.of(spec).workload(impl.workload).input_names


def observe_all(impl: Any, cases: Sequence[tuple[Any, tuple]], timeout_s: float
                ) -> Iterator[Any]:
    """The isolated task: first the `Plan`, then one Observation per (spec, its inputs). After a
    timeout the rest are not run (its interrupted call may have left it stuck: one hang costs
    one timeout)."""
    ahead = plan(impl, [spec for spec, _ in cases], timeout_s)
    yield ahead
    hung = any(a is not None and "timeout" in a.error for a in ahead.ahead)
    for (spec, args), decided in zip(cases, ahead.ahead):
        if decided is not None:
            yield decided
        elif hung:
            yield Observation(error="not run: an earlier case timed out", failed_call=0)
        else:
            seen = observe(impl, spec, args, timeout_s)
            hung = seen.error.startswith("timeout")
            yield seen


def guarded(fn: Callable[[], Any], timeout_s: float) -> tuple[Any, str]:
    """(result, "") or (None, why the call failed): an implementation's fault is a verdict,
    its SystemExit too."""
    try:
        return call_with_deadline(fn, timeout_s), ""
    except CallTimeout as exc:
        return None, f"timeout: {exc}"
    except (Exception, SystemExit) as exc:
        return None, f"{type(exc).__name__}: {exc}"
