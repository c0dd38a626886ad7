"""Bench's results judged against the reference, in the process that never imports an implementation.

A worker hosts the implementations it times, so whatever it concludes about their
values, an implementation could have rewritten (numpy's absolute value, the
harness's checks). So the worker only *records*: `sample` takes the values of a
well-formed result (joined as the reference is laid out) at SAMPLES flat indices
drawn from the run's seed, for the first call and for a call under
pytest-benchmark's timer, into the row (`sampled`). The supervisor (`Judge`),
which imports no implementation (harness.core.catalog), computes the reference,
its tolerance and, for a workload with inputs, the expected result for those
inputs, once per spec, and holds every sample to them, element by element, by the
same contract as verify. A cell whose first or timed values miss is `invalid`:
never recommended. A kernel wrong in every call, first included, but consistent
is caught here, not only by verify.

What it does not promise: a result past JUDGED_ELEMENTS is not judged here (its reference
would take too much of this process's memory); the sample is drawn in the worker, with a seed the
implementation's process can read; code that rewrites this module's `sample`
itself could still lie about its values. What it cannot do is reach the reference,
the tolerance or the comparison.
"""

from __future__ import annotations

import os
import secrets
from collections import OrderedDict
from dataclasses import fields
from typing import Any, Callable, Hashable, Mapping, Optional

import numpy as np

from harness.bench.cells import Cell
from harness.core import handover, kinds
from harness.core.checks import error_ratio

#: The run's sample seed, set by the supervisor for its workers.
SEED_ENV = "PE_HARNESS_BENCH_SAMPLE_SEED"
#: Values sampled from each judged result: enough that a result wrong in one element of a
#: thousand is caught at least once in about 40% of cells, and one wrong in a tenth of its
#: elements almost surely; a few kB in the journal per cell.
SAMPLES = 512
#: The largest result (elements) the judge computes a float64 reference for: about 0.6 GB of
#: reference, tolerance and expected arrays at once in bench's own process. Larger cells (a
#: batched forward or apply past 16 Mi elements) are left to verify's judgement.
JUDGED_ELEMENTS = 1 << 24
#: References and tolerances the judge keeps for reuse: rows arrive a worker group at a time,
#: every implementation and dtype of a size together, so a few cover the reuse, and a float64
#: reference of JUDGED_ELEMENTS is 128 MiB of this process's memory.
KEPT = 2


def new_seed() -> int:
    return secrets.randbits(32)


def worker_seed() -> Optional[int]:
    """The seed this worker samples with (None: no supervisor set one; nothing sampled)."""
    text = os.environ.get(SEED_ENV, "")
    return int(text) if text.isdigit() else None


def indices(size: int, seed: int) -> np.ndarray:
    """SAMPLES flat indices of a result of `size` elements (all of them when fewer), sorted."""
    if size <= SAMPLES:
        return np.arange(size)
    return np.sort(np.random.default_rng(seed).choice(size, SAMPLES, replace=False))


def sample(values: Optional[np.ndarray], seed: Optional[int]) -> tuple[float, ...]:
    """The values of a well-formed result (joined as the reference is) at the run's indices;
    () when there is no result or no seed."""
    if values is None or seed is None:
        return ()
    flat = values.reshape(-1)
    return tuple(float(v) for v in flat[indices(flat.size, seed)])


def negated(args: tuple) -> tuple:
    """`args` with every float input negated (new arrays; integer position ids as they are): the
    inputs of the call bench makes after the timed rounds (harness.core.handover)."""
    return handover.variant(args, handover.NEGATED)


#: The flag of a cell whose result did not follow its inputs (harness.runs.flags).
INPUTS_FLAG = "inputs: "


def _judged(row: Mapping[str, Any], values: Any) -> Optional[Cell]:
    """The cell of a row this judge holds `values` of to the reference: an implementation's
    ok row with values, small enough for the parent's float64 reference; else None."""
    if row.get("status") != "ok" or row.get("is_roof") or not values:
        return None
    cell = Cell.from_dict(dict(row))
    return None if cell.elements > JUDGED_ELEMENTS else cell


class Judge:
    """Holds sampled values to the reference, computed here once per spec for the run."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._wanted: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        #: the float64 reference does not depend on the output dtype (a kind's `reference`
        #: never reads it): one per shape and convention, shared by every dtype, by each
        #: workload of the kind and by the negated inputs' variant (3.8 CPU-s of a default
        #: run's table at 65536x256 was that reference computed again per dtype)
        self._references: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._tolerances: OrderedDict[Hashable, np.ndarray] = OrderedDict()

    def problem(self, row: Mapping[str, Any]) -> str:
        """Why a row timed ok holds values other than the reference's ('' when they are
        within tolerance, or when nothing was sampled): its first or a timed call's, or, for an
        implementation handed its inputs at every call, a call's given other inputs after the
        timed rounds (a result computed once and handed back does not follow them)."""
        if row.get("inputs_at") == "call" and not self._follows(row):
            return ("given other inputs (negated) after the timed rounds, it returned values "
                    "other than theirs: a result computed once and handed back, not computed "
                    "from its inputs; judged where no implementation runs")
        sampled = row.get("sampled") or ()
        cell = _judged(row, sampled)
        if cell is None:
            return ""
        expected, allowed = self._expected(cell)
        for name, values in zip(("first call", "a call under the benchmark's timer"), sampled):
            got = np.asarray(values, dtype=np.float64)
            if got.shape != expected.shape:
                return f"{name}: {got.size} sampled values, expected {expected.size}"
            found = error_ratio(got, expected, allowed)
            if found.reason:
                return (f"{name}: its values at {got.size} sampled places differ from the "
                        f"reference (error {found.max_abs_err:.3g} > tolerance {found.tol:.3g}): "
                        "wrong values, judged where no implementation runs")
        return ""

    def _follows(self, row: Mapping[str, Any]) -> bool:
        """Whether a row's call after the timed rounds, on negated inputs, returned their
        expected result (True when nothing was sampled: a graph-mode or too large cell)."""
        moved = row.get("moved") or ()
        cell = _judged(row, moved)
        if cell is None:
            return True
        expected, allowed = self._expected(cell, negated)
        got = np.asarray(moved, dtype=np.float64)
        return got.shape == expected.shape and not error_ratio(got, expected, allowed).reason

    def inputs_flag(self, row: Mapping[str, Any]) -> str:
        """'inputs: ...' when a row timed ok of an implementation given its inputs at build
        time (deprecated) returned, after they were negated in place, values other than those
        inputs' expected result (its timing may be of a copy made at build time: never
        recommended); '' otherwise."""
        if row.get("inputs_at") == "call" or self._follows(row):
            return ""
        return (f"{INPUTS_FLAG}its result did not follow its inputs, negated in place after the "
                "timed rounds: it computed its answer, or copied its inputs, at build time, so "
                "its timing may be of a copy (take the inputs as given, at call time)")

    def _expected(self, cell: Cell, change: Any = None) -> tuple[np.ndarray, np.ndarray]:
        key = (cell.kind, cell.workload, cell.spec(), cell.batch, cell.heads, change)
        if key not in self._wanted:
            spec, kind = cell.spec(), kinds.named(cell.kind)
            args = cell.work.arguments(spec, cell.batch, cell.heads)
            args = change(args) if change is not None else args
            reference = _kept(self._references, without_dtype(spec), lambda: kind.reference(spec))
            tolerance = _kept(self._tolerances, spec, lambda: kind.tolerance(spec))
            expected, allowed = cell.work.expected(spec, args, reference, tolerance)
            at = indices(expected.size, self.seed)
            self._wanted[key] = (np.ravel(expected)[at].astype(np.float64),
                                 np.ravel(np.broadcast_to(allowed, expected.shape))[at])
        return self._wanted[key]


def without_dtype(spec: Any) -> Hashable:
    """A spec's identity but for its output dtype: what its float64 reference depends on."""
    return (type(spec).__name__,
            tuple((f.name, repr(getattr(spec, f.name))) for f in fields(spec) if f.name != "dtype"))


def _kept(store: "OrderedDict[Hashable, np.ndarray]", key: Hashable,
          compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`store[key]`, computed on a miss; the KEPT most recently used stay."""
    if key in store:
        store.move_to_end(key)
        return store[key]
    store[key] = value = compute()
    if isinstance(value, np.ndarray):
        value.flags.writeable = False      # shared: a workload's `expect` must not write to it
    while len(store) > KEPT:
        store.popitem(last=False)
    return value
