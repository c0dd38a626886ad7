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
from harness.core import handover, inplace, kinds
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
    #: which input set (harness.core.handover.variant) each result was computed from
    variants: tuple[int, ...] = ()
    #: its callable took the inputs at call time (False: at build time, or none)
    at_call: bool = False


def snapshot(out: Any, copy: bool = True) -> Returned:
    """A copy of `out`'s values as NumPy with its dtype's name (the copy survives poisoning);
    `copy=False`: the values as NumPy, read in place where the backend allows (for a verdict
    read at once: no copy of a large result to pay for)."""
    if isinstance(out, (tuple, list)):
        return Returned(dtype=type(out).__name__, parts=tuple(snapshot(p, copy) for p in out))
    if out is None:
        return Returned(problem="returned None, not an array")
    try:
        arr = np.array(to_numpy(out), copy=True) if copy else np.asarray(to_numpy(out))
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
    """Build, call, poison, call again, let go, call a third time; every result copied. A
    call-time implementation gets a fresh input set per call (harness.core.handover); a
    build-time one has its inputs negated in place after these calls, and is called once more.
    Never raises for the implementation's faults (SystemExit included)."""
    start = time.perf_counter()
    at_call = bool(args) and impl.inputs_at_call
    given = args
    args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)   # its own inputs
    built, why = guarded(lambda: impl.build(spec) if at_call else impl.build(spec, *args),
                         timeout_s)
    if why:
        return Observation(error=why, failed_call=0, seconds=time.perf_counter() - start)
    in_place = inplace.declared_in_place(getattr(impl, "forms_declared", None))
    fn, mismatch = inplace.calling(built, in_place, at_call)
    if mismatch:
        return Observation(mismatch=mismatch, seconds=time.perf_counter() - start)
    hand = _Hands(impl, spec, given, at_call)
    wrote: tuple[str, ...] = ()
    results: list[Returned] = []
    poisoned: list[bool] = []
    held: list[Any] = []
    same = False

    def seen(**extra: Any) -> Observation:
        return Observation(results=tuple(results), poisoned=tuple(poisoned), same_buffer=same,
                           seconds=time.perf_counter() - start, wrote_inputs=wrote,
                           variants=hand.variants[:len(results)], at_call=at_call, **extra)

    for call in (1, 2, 3):
        if call == 3 and not all(poisoned):      # nothing to learn from reused memory
            break
        if call == 3:
            held.clear()                         # let both poisoned results go
            out = None
        handed = hand.inputs(call - 1)
        before = hand.read(handed) if call == 1 and at_call and not in_place else ()
        out, why = guarded(lambda: fn(*handed), timeout_s)
        if why:
            return seen(error=why, failed_call=call)
        results.append(snapshot(out))
        if call == 1 and not in_place:
            wrote = hand.written(before, handed, args, _input_names(impl, spec))
        if call == 2 and not poisoned[0]:
            same = same_buffer(held[0], out)
        poisoned.append(call < 3 and (call == 1 or poisoned[0]) and poison(out))
        held.append(out)
    if given and not at_call and handover.negate_in_place(args):   # must follow its inputs
        hand.variants = (0,) * len(results) + (handover.NEGATED,)
        out, why = guarded(fn, timeout_s)
        if why:
            return seen(error=why, failed_call=len(results) + 1)
        results.append(snapshot(out))
    return seen()


class _Hands:
    """The inputs each call is handed: for a call-time implementation a fresh set per call,
    converted to its backend (variants 0, 1, 2); for a build-time one, nothing (it has its own)."""

    def __init__(self, impl: Any, spec: Any, given: tuple, at_call: bool) -> None:
        self.impl, self.spec, self.given, self.at_call = impl, spec, given, at_call
        self.variants: tuple[int, ...] = (tuple(range(handover.VARIANTS)) if at_call
                                          else (0,) * 3)

    def inputs(self, index: int) -> tuple:
        if not self.at_call:
            return ()
        return handover.convert(handover.variant(self.given, self.variants[index]),
                                self.impl.backend, self.spec.dtype, self.impl.device)

    def written(self, before: tuple, handed: tuple, own: tuple, names: tuple[str, ...]
                ) -> tuple[str, ...]:
        """The inputs an out-of-place implementation wrote into during its first call: its own
        copies of the NumPy inputs (build time), or what it was handed (`before` the call)."""
        if not self.at_call:
            return inplace.written(self.given, own, names)
        return inplace.written(before, self.read(handed), names)

    def read(self, handed: tuple) -> tuple:
        """Copies of the handed inputs' values as NumPy (() when they cannot be read back)."""
        try:
            return tuple(np.array(to_numpy(h)) for h in handed)
        except Exception:
            return ()


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
