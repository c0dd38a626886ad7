"""Judge what an implementation returned: shape, dtype, finiteness, error, and the poison test.

This is the single path by which anything is called correct: `verify`, the
regression tests and bench's "passes verify" all go through `judge`. It sees
only plain copies of the results (harness.core.observe, made where the
implementation ran) and computes the reference and tolerance itself, so in
verify it runs in a process that never imports an implementation. The
comparison proper is one pure function, `error_ratio`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from harness.core import contract, handover, kinds
from harness.core.contract import eps
from harness.core.observe import (Observation, Returned, observe, plan, poison, same_buffer,
                                   snapshot)
from harness.core.registry import Implementation

__all__ = ["Check", "Comparison", "Expectation", "check", "compare", "error_ratio", "expect",
           "inputs", "judge", "poison", "same_buffer", "well_formed"]

VERDICTS = ("pass", "fail", "error", "skip")


@dataclass(frozen=True)
class Check:
    """The verdict for one (implementation, spec)."""

    impl: str
    backend: str
    device: str
    workload: str
    spec: Any                 # the spec of its kind (harness.core.kinds)
    status: str
    reason: str = ""
    max_abs_err: float = float("nan")
    tol: float = float("nan")
    err_ratio: float = float("nan")
    ulps: float = float("nan")
    worst_pos: int = -1
    worst_col: int = -1
    seconds: float = 0.0
    #: the contract met (harness.core.contract.GRADES): exact, float32, or fail; "" when not judged
    grade: str = ""

    def row(self) -> dict[str, Any]:
        """Flat dict for the CSV: identity, Spec fields, measures, verdict."""
        head = {"impl": self.impl, "backend": self.backend, "device": self.device,
                "kind": kinds.of(self.spec).name, "workload": self.workload}
        tail = {k: getattr(self, k) for k in ("max_abs_err", "tol", "err_ratio", "ulps",
                                              "worst_pos", "worst_col", "status", "grade", "reason",
                                              "seconds")}
        return {**head, **{k: _cell(v) for k, v in self.spec.as_dict().items()}, **tail}


#: A spec field holding more values than this (a timestep vector, longrope's factors) is
#: summarised in a CSV cell; the spec itself is in verify.md's label and the JSON output.
MAX_CELL_VALUES = 8


def _cell(value: Any) -> Any:
    """A spec field as one CSV cell: long sequences summarised, not spilled."""
    if isinstance(value, (list, tuple)) and len(value) > MAX_CELL_VALUES:
        return f"{len(value)} values, {min(value):g} .. {max(value):g}"
    return value


@dataclass(frozen=True)
class Comparison:
    """How one output compares with the reference (None reason: within tolerance)."""

    reason: Optional[str]
    max_abs_err: float = float("nan")
    tol: float = float("nan")
    err_ratio: float = float("nan")
    worst: tuple[int, int] = field(default=(-1, -1))
    grade: str = "fail"


#: Rows of a result checked for NaN/Inf at once: bounds the temporary of a huge table.
FINITE_CHUNK_ELEMENTS = 1 << 22
#: A tolerance this small says the value must come back exactly as given (a partial rotary's tail).
UNCHANGED = float(np.finfo(np.float64).tiny)
#: The NumPy dtype kinds a result may hold (bool, ints, floats, complex): never objects.
NUMERIC_KINDS = "biufc"


def error_ratio(got: np.ndarray, expected: np.ndarray, allowed: np.ndarray,
                parts: tuple[str, ...] = (), exact: Optional[np.ndarray] = None) -> Comparison:
    """THE comparison: the worst |got - expected| relative to its per-element tolerance, and
    where; a ratio above 1 fails; and the contract met (`contract.grade`: within `exact` too is
    `exact`). Pure: arrays in, a Comparison out."""
    err = np.abs(got.astype(np.float64) - expected)
    with np.errstate(over="ignore"):        # an error where the value must be unchanged: inf
        ratio = err / allowed
    flat = int(np.argmax(ratio))
    idx = np.unravel_index(flat, ratio.shape)
    worst = (int(idx[-2]), int(idx[-1])) if len(idx) >= 2 else (int(idx[0]), -1)  # a 1-D kind
    result = dict(max_abs_err=float(err.max()), tol=float(allowed.flat[flat]),
                  err_ratio=float(ratio.flat[flat]), worst=worst,
                  grade=contract.grade(err, allowed, exact))
    if not ratio.flat[flat] <= 1.0:     # NaN-safe by itself: a NaN error is never within tolerance
        where = f"{parts[idx[0]]}: " if parts else ""
        limit = allowed.flat[flat]
        bound = f"tolerance {limit:.3g}" if limit > UNCHANGED else "0 (must come back unchanged)"
        return Comparison(f"{where}error {err.flat[flat]:.3g} > {bound} at position {worst[0]}, "
                          f"column {worst[1]}{_first_over(ratio, worst[0])}", **result)
    return Comparison(None, **result)


def _first_over(ratio: np.ndarray, worst_position: int) -> str:
    """Where the errors first pass their tolerance, when that is not where they are worst: a
    position held in bfloat16 goes wrong from 257 on, in float16 from 2049."""
    if ratio.ndim < 2:
        return ""
    over = ~(ratio <= 1.0).reshape(-1, *ratio.shape[-2:]).all(axis=(0, 2))
    first = int(np.argmax(over))
    return f" (first beyond its tolerance at position {first})" if first != worst_position else ""


def well_formed(out: Any, shape: tuple[int, ...], want_dtype: str, parts: tuple[str, ...] = (),
                arrangement: Optional[kinds.Arrangement] = None, joined: bool = True,
                copy: Optional[bool] = None) -> tuple[Optional[str], Optional[np.ndarray]]:
    """(None, the result as NumPy) when `out` (a result, or its `Returned` copy) is an array of
    `shape` and `want_dtype` holding only finite values, else (why not, None): the cheap part of
    `compare`, needing no reference. With `parts`, `out` is a tuple of that many arrays, each of
    the `arrangement`'s shape for it (default: each `shape[1:]`), judged in order and returned
    joined (default: stacked); `joined=False` judges the same way but returns no array, and
    copies nothing it can read in place (a caller that wants only the verdict need not pay for
    copies and a join of a large result); `copy=False` returns the array read in place where
    it can (for values read at once, before the result's buffer can change)."""
    returned = out if isinstance(out, Returned) else snapshot(out, copy=joined if copy is None
                                                              else copy)
    if parts:
        arrangement = arrangement or kinds.Arrangement(tuple(tuple(shape[1:]) for _ in parts))
        return _well_formed_parts(returned, want_dtype, parts, arrangement, joined)
    if returned.problem:
        return returned.problem, None
    if returned.parts is not None or not isinstance(returned.array, np.ndarray):
        return f"dtype {returned.dtype or 'unknown'}, expected {want_dtype}", None
    arr = returned.array
    if arr.dtype.kind not in NUMERIC_KINDS:
        return f"holds {arr.dtype} values, not numbers", None
    if arr.shape != tuple(shape):
        return f"shape {tuple(arr.shape)}, expected {tuple(shape)}", None
    if returned.dtype != want_dtype:
        return f"dtype {returned.dtype}, expected {want_dtype}", None
    bad = nonfinite(arr)
    if bad is not None:
        count, (position, column) = bad
        return f"{count} NaN/Inf values (first at position {position}, column {column})", None
    return None, arr if joined else None


def _well_formed_parts(returned: Returned, want_dtype: str, parts: tuple[str, ...],
                       arrangement: kinds.Arrangement, joined: bool = True
                       ) -> tuple[Optional[str], Optional[np.ndarray]]:
    names = ", ".join(parts)
    got = returned.parts
    if got is None or len(got) != len(parts):
        what = f"{len(got)} items" if got is not None else (returned.dtype or "None")
        return f"returned {what}, expected a tuple ({names})", None
    arrays = []
    for name, part, shape in zip(parts, got, arrangement.shapes):
        problem, arr = well_formed(part, shape, want_dtype)
        if problem is not None:
            return f"{name}: {problem}", None
        arrays.append(arr)
    return None, arrangement.join(arrays) if joined else None


def nonfinite(arr: np.ndarray) -> Optional[tuple[int, tuple[int, int]]]:
    """None when every value of `arr` is finite, else (how many are not, the (position, column)
    of the first); checked a block of rows at a time."""
    if arr.size == 0:
        return None
    arr = arr.reshape(1, -1) if arr.ndim < 2 else arr
    rows = arr.reshape(-1, arr.shape[-1])
    step = max(1, FINITE_CHUNK_ELEMENTS // max(1, rows.shape[1]))
    count, first = 0, None
    for start in range(0, rows.shape[0], step):
        bad = ~np.isfinite(rows[start:start + step])
        n = int(np.count_nonzero(bad))
        if n and first is None:
            row, column = np.argwhere(bad)[0]
            first = (int((start + row) % arr.shape[-2]), int(column))
        count += n
    return (count, first) if count else None


def compare(out: Any, expected: np.ndarray, allowed: np.ndarray, want_dtype: str,
            parts: tuple[str, ...] = (), arrangement: Optional[kinds.Arrangement] = None,
            exact: Optional[np.ndarray] = None) -> Comparison:
    """Shape, dtype, NaN/Inf (`well_formed`), then `error_ratio` (a tuple result's `parts`
    joined, in order, as the reference joins them) and the grade (within `exact` too: exact)."""
    problem, arr = well_formed(out, expected.shape, want_dtype, parts, arrangement)
    if problem is not None:
        return Comparison(problem)
    return error_ratio(arr, expected, allowed, parts, exact)


@dataclass(frozen=True)
class Expectation:
    """What the judge holds one case's results against: computed where no implementation runs."""

    expected: np.ndarray
    allowed: np.ndarray
    dtype: str
    parts: tuple[str, ...]
    arrangement: Optional[kinds.Arrangement] = None   # how a tuple result's parts come back
    exact: Optional[np.ndarray] = None                # the exact contract's bound (None: none)
    case: str = ""                                    # how the case hands inputs over, for reasons
    inputs: bool = False                              # the workload's factory gets inputs

    def compare(self, out: Any) -> Comparison:
        return compare(out, self.expected, self.allowed, self.dtype, self.parts, self.arrangement,
                       self.exact)


def inputs(workload: str, spec: Any) -> tuple:
    """The NumPy inputs verify gives a workload's factory on `spec` (none for a table), at the
    workload's own verify batch and heads."""
    work = kinds.of(spec).workload(workload)
    return work.arguments(spec, work.verify_batch, work.verify_heads)


def expect(workload: str, spec: Any, args: tuple) -> Expectation:
    """The reference and per-element tolerance of `workload` on `spec` given `args`."""
    kind = kinds.of(spec)
    work = kind.workload(workload)
    reference = kind.reference(spec)
    expected, allowed = work.expected(spec, args, reference, kind.tolerance(spec))
    exact = work.expected(spec, args, reference, kind.exact(spec))[1] if kind.exact else None
    told = work.describe(spec) if work.describe is not None else None
    return Expectation(expected, allowed, spec.dtype, work.parts,
                       work.arrangement(spec, work.verify_batch, work.verify_heads), exact, told or "",
                       work.inputs is not None)


def judge(impl: Any, spec: Any, seen: Observation, want: Callable[..., Expectation]) -> Check:
    """The verdict on what `impl` did (`seen`): the first result within tolerance, the second
    fresh after the first was poisoned, the third written after both poisoned ones were let go;
    for a workload with inputs, a result computed from changed inputs follows them
    (harness.core.handover). `want(variant=0)` is the expectation for an input set, called only
    when there is a result to compare. A pass is graded by the contract every result met
    (harness.core.contract)."""
    graded: list[str] = []

    def verdict(status: str, reason: str = "", comparison: Optional[Comparison] = None) -> Check:
        extra = {}
        if comparison is not None and not np.isnan(comparison.max_abs_err):
            extra = dict(max_abs_err=comparison.max_abs_err, tol=comparison.tol,
                         err_ratio=comparison.err_ratio,
                         ulps=comparison.max_abs_err / eps(spec.dtype),
                         worst_pos=comparison.worst[0], worst_col=comparison.worst[1])
        grade = {"pass": max(graded, key=contract.GRADES.index, default="float32"),
                 "fail": "fail", "error": "fail"}.get(status, "")
        return Check(impl.name, impl.backend, impl.device, impl.workload, spec, status,
                     reason, seconds=_seconds(seen), grade=grade, **extra)

    if not isinstance(seen, Observation):
        return verdict("error", f"its process sent a {type(seen).__name__}, not an observation")
    if seen.skip:
        return verdict("skip", seen.skip)
    if seen.mismatch:               # the factory's result contradicts the declaration
        return verdict("fail", seen.mismatch)
    results, poisoned = tuple(seen.results), tuple(seen.poisoned)
    variants = tuple(seen.variants) + (0,) * (len(results) - len(seen.variants))
    if seen.error and seen.failed_call <= 1:
        return verdict("error", seen.error)
    if not results:
        return verdict("error", "returned no result")
    case = want()

    def judged(index: int) -> Comparison:
        result = (want(variants[index]) if variants[index] else case).compare(results[index])
        graded.append(result.grade)
        return result

    first = judged(0)
    if first.reason:
        return verdict("fail", f"{first.reason} ({case.case})" if case.case else first.reason, first)
    if seen.wrote_inputs:
        return verdict("fail", wrote_inputs(seen.wrote_inputs), first)
    if seen.error and seen.failed_call == 2:
        return verdict("error", "second call: " + seen.error, first)
    if len(results) < 2 or len(poisoned) < 1:
        return verdict("error", "the second call returned no result", first)
    if not poisoned[0] and seen.same_buffer:
        return verdict("fail", "returned the same buffer twice: a cached result, not a builder",
                       first)
    again = judged(1)
    if again.reason:
        if variants[1]:
            return verdict("fail", f"{_other_inputs(variants[1])}: {again.reason} (a result "
                           "computed once and handed back, not computed from its inputs)", again)
        why = "after poisoning the first result: " if poisoned[0] else "second call: "
        hint = " (a cached result, not a builder)" if poisoned[0] and "NaN" in again.reason else ""
        if not hint and case.inputs:       # right the first time, wrong on the same inputs
            hint = " (the first call was right: did it write into its own copy of the inputs?)"
        return verdict("fail", why + again.reason + hint, again)
    if len(poisoned) >= 2 and poisoned[0] and poisoned[1]:
        if seen.error and seen.failed_call == 3:
            return verdict("error", "third call: " + seen.error, first)
        if len(results) < 3:
            return verdict("error", "the third call returned no result", first)
        last = judged(2)
        if last.reason and variants[2]:
            return verdict("fail", f"{_other_inputs(variants[2])}: {last.reason}", last)
        if last.reason:
            return verdict("fail", "after letting two poisoned results go: " + last.reason
                           + " (reused memory without writing it)", last)
    if case.inputs:
        return _followed(verdict, judged, seen, variants, first)
    return verdict("pass", "", first)


def _other_inputs(variant: int) -> str:
    return {1: "given its inputs negated", 2: "given its inputs reversed along the last axis "
            "and the position ids rolled"}.get(variant, f"given input set {variant}")


def _followed(verdict: Callable[..., Check], judged: Callable[[int], Comparison],
              seen: Observation, variants: tuple[int, ...], first: Comparison) -> Check:
    """A workload with inputs passes only once a result computed from changed inputs followed
    them: a call-time implementation's second call (judged already), or a build-time one's last
    call, after its inputs were negated in place."""
    changed = [i for i, v in enumerate(variants) if v == handover.NEGATED]
    if not changed:
        return verdict("error", seen.error or "returned no result for its inputs changed", first)
    index = changed[0]
    if seen.at_call or index < 2:
        return verdict("pass", "", first)
    moved = judged(index)
    if moved.reason:
        return verdict("fail", "its inputs negated in place after it was built: " + moved.reason
                       + " (it computed its answer, or copied its inputs, at build time; a "
                       "factory that takes the spec only and returns fn(*inputs) is handed them "
                       "at every call)", moved)
    return verdict("pass", "", first)


def wrote_inputs(names: tuple[str, ...]) -> str:
    """Why an out-of-place implementation that wrote into its inputs fails."""
    return (f"wrote into its input(s) {', '.join(names)}: an out-of-place implementation must "
            "leave its inputs untouched (a kernel that rotates in place declares in_place=True "
            "and returns harness.InPlace(reset, call))")


def _seconds(seen: Any) -> float:
    value = getattr(seen, "seconds", 0.0)
    return float(value) if isinstance(value, (int, float)) else 0.0


def check(impl: Implementation, spec: Any, timeout_s: float = 120.0) -> Check:
    """Observe and judge in this process (tests, `--in-process`): the same verdict as verify's,
    without its isolation."""
    (decided,) = plan(impl, [spec], timeout_s).ahead
    if decided is not None:
        return judge(impl, spec, decided, _never)
    args = inputs(impl.workload, spec)

    def want(variant: int = 0) -> Expectation:   # observe hands over copies: args stay as drawn
        return _recent_expectation(impl.workload, spec, variant,
                                   lambda: expect(impl.workload, spec, handover.variant(args, variant)))

    return judge(impl, spec, observe(impl, spec, args, timeout_s), want)


#: Expectations of the last few cases: checking every implementation of a kind on one case
#: before the next (the test matrix) computes each reference and tolerance once, where they had
#: taken a third of the matrix's time, computed again for every implementation. A case's inputs
#: are drawn from its spec with a fixed seed (`inputs`), so its spec and the variant decide them.
RECENT_CASES = 8
_RECENT: "OrderedDict[tuple[str, str, int], Expectation]" = OrderedDict()


def _recent_expectation(workload: str, spec: Any, variant: int,
                        compute: Callable[[], Expectation]) -> Expectation:
    key = (workload, repr(spec), variant)
    if key in _RECENT:
        _RECENT.move_to_end(key)
        return _RECENT[key]
    _RECENT[key] = found = compute()
    for held in (found.expected, found.allowed, found.exact):   # shared: nobody writes them
        if held is not None:
            held.flags.writeable = False
    while len(_RECENT) > RECENT_CASES:
        _RECENT.popitem(last=False)
    return found


def _never(variant: int = 0) -> Expectation:
    raise AssertionError("a skipped case has nothing to compare")
