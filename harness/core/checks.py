"""Judge one implementation on one Spec: shape, dtype, finiteness, error, and the poison test.

This is the single path by which anything is called correct: `verify`, the
regression tests and bench's "passes verify" all go through `check`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from harness import backends
from harness.core import kinds
from harness.core.convert import dtype_name, to_numpy
from harness.core.registry import Implementation
from harness.core.kinds.table.tolerance import eps
from harness.util.deadline import CallTimeout, call_with_deadline

VERDICTS = ("pass", "fail", "error", "skip")
#: The batch and heads of the inputs verify gives a batched workload (forward, rotary apply).
CHECK_BATCH = 2
CHECK_HEADS = 2


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

    def row(self) -> dict[str, Any]:
        """Flat dict for the CSV: identity, Spec fields, measures, verdict."""
        head = {"impl": self.impl, "backend": self.backend, "device": self.device,
                "kind": kinds.of(self.spec).name, "workload": self.workload}
        tail = {k: getattr(self, k) for k in ("max_abs_err", "tol", "err_ratio", "ulps",
                                              "worst_pos", "worst_col", "status", "reason", "seconds")}
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


#: Rows of a result checked for NaN/Inf at once: bounds the temporary of a huge table.
FINITE_CHUNK_ELEMENTS = 1 << 22


def well_formed(out: Any, shape: tuple[int, ...], want_dtype: str,
                parts: tuple[str, ...] = ()) -> tuple[Optional[str], Optional[np.ndarray]]:
    """(None, the result as NumPy) when `out` is an array of `shape` and `want_dtype` holding only
    finite values, else (why not, None): the cheap part of `compare`, needing no reference.
    With `parts`, `out` is a tuple of that many arrays, each of `shape[1:]`, judged in order and
    returned stacked."""
    if parts:
        return _well_formed_parts(out, shape, want_dtype, parts)
    if out is None:
        return "returned None, not an array", None
    got_dtype = dtype_name(out)
    try:
        arr = to_numpy(out)
    except Exception as exc:
        return f"result of type {type(out).__name__} is not array-like: {exc}", None
    if arr.shape != tuple(shape):
        return f"shape {tuple(arr.shape)}, expected {tuple(shape)}", None
    if got_dtype != want_dtype:
        return f"dtype {got_dtype}, expected {want_dtype}", None
    bad = nonfinite(arr)
    if bad is not None:
        count, (position, column) = bad
        return f"{count} NaN/Inf values (first at position {position}, column {column})", None
    return None, arr


def _well_formed_parts(out: Any, shape: tuple[int, ...], want_dtype: str,
                       parts: tuple[str, ...]) -> tuple[Optional[str], Optional[np.ndarray]]:
    names = ", ".join(parts)
    if not isinstance(out, (tuple, list)) or len(out) != len(parts):
        got = f"{len(out)} items" if isinstance(out, (tuple, list)) else type(out).__name__
        return f"returned {got}, expected a tuple ({names})", None
    arrays = []
    for name, part in zip(parts, out):
        problem, arr = well_formed(part, shape[1:], want_dtype)
        if problem is not None:
            return f"{name}: {problem}", None
        arrays.append(arr)
    return None, np.stack(arrays)


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
            parts: tuple[str, ...] = ()) -> Comparison:
    """Shape, dtype, NaN/Inf (`well_formed`), then the worst error relative to its per-element
    tolerance (a tuple result's `parts` stacked, in order, as the reference stacks them)."""
    problem, arr = well_formed(out, expected.shape, want_dtype, parts)
    if problem is not None:
        return Comparison(problem)
    arr = arr.astype(np.float64)
    err = np.abs(arr - expected)
    ratio = err / allowed
    flat = int(np.argmax(ratio))
    idx = np.unravel_index(flat, ratio.shape)
    worst = (int(idx[-2]), int(idx[-1])) if len(idx) >= 2 else (int(idx[0]), -1)  # a 1-D kind
    result = dict(max_abs_err=float(err.max()), tol=float(allowed.flat[flat]),
                  err_ratio=float(ratio.flat[flat]), worst=worst)
    if not ratio.flat[flat] <= 1.0:     # NaN-safe by itself: a NaN error is never within tolerance
        where = f"{parts[idx[0]]}: " if parts else ""
        return Comparison(f"{where}error {err.flat[flat]:.3g} > tolerance {allowed.flat[flat]:.3g} "
                          f"at position {worst[0]}, column {worst[1]}", **result)
    return Comparison(None, **result)


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


def check(impl: Implementation, spec: Any, timeout_s: float = 120.0) -> Check:
    """Build, call, compare; call again after poisoning the result, and once more after letting
    both poisoned results go; never raises for the impl's faults."""

    def verdict(status: str, reason: str = "", comparison: Optional[Comparison] = None,
                seconds: float = 0.0) -> Check:
        extra = {}
        if comparison is not None and not np.isnan(comparison.max_abs_err):
            extra = dict(max_abs_err=comparison.max_abs_err, tol=comparison.tol,
                         err_ratio=comparison.err_ratio, ulps=comparison.max_abs_err / eps(spec.dtype),
                         worst_pos=comparison.worst[0], worst_col=comparison.worst[1])
        return Check(impl.name, impl.backend, impl.device, impl.workload, spec, status,
                     reason, seconds=seconds, **extra)

    kind = kinds.of(spec)
    if kind.name != impl.kind:
        return verdict("skip", f"builds a {impl.kind!r}, not a {kind.name!r}")
    unavailable = impl.unavailable_reason()
    if unavailable:
        return verdict("skip", unavailable)
    unsupported = impl.supports(spec)
    if unsupported:
        return verdict("skip", unsupported)

    work = kind.workload(impl.workload)
    args = work.arguments(spec, CHECK_BATCH, CHECK_HEADS)
    expected, allowed = work.expected(spec, args, kind.reference(spec), kind.tolerance(spec))
    parts = work.parts

    start = time.perf_counter()
    fn, why = _call(lambda: impl.build(spec, *args), timeout_s)
    first, why = (None, why) if why else _call(fn, timeout_s)
    if why:
        return verdict("error", why, seconds=time.perf_counter() - start)
    comparison = compare(first, expected, allowed, spec.dtype, parts)
    if comparison.reason:
        return verdict("fail", comparison.reason, comparison, time.perf_counter() - start)

    # Every call must compute a fresh result (a forward may keep its table, never its output):
    # poison what it returned and call again; where it cannot be poisoned, it must not come back.
    poisoned = poison(first)
    second, why = _call(fn, timeout_s)
    if why:
        return verdict("error", "second call: " + why, comparison, time.perf_counter() - start)
    if not poisoned and same_buffer(first, second):
        return verdict("fail", "returned the same buffer twice: a cached result, not a builder",
                       comparison, time.perf_counter() - start)
    again = compare(second, expected, allowed, spec.dtype, parts)
    if again.reason:
        why = "after poisoning the first result: " if poisoned else "second call: "
        hint = " (a cached result, not a builder)" if poisoned and "NaN" in again.reason else ""
        return verdict("fail", why + again.reason + hint, again, time.perf_counter() - start)
    if not (poisoned and poison(second)):
        return verdict("pass", "", comparison, time.perf_counter() - start)
    # Memory the caller has let go may be reused (harness.util.recycle), but must be written again:
    # let both poisoned results go and call a third time.
    del first, second
    third, why = _call(fn, timeout_s)
    if why:
        return verdict("error", "third call: " + why, comparison, time.perf_counter() - start)
    last = compare(third, expected, allowed, spec.dtype, parts)
    if last.reason:
        return verdict("fail", "after letting two poisoned results go: " + last.reason
                       + " (reused memory without writing it)", last, time.perf_counter() - start)
    return verdict("pass", "", comparison, time.perf_counter() - start)


def _call(fn: Callable[[], Any], timeout_s: float) -> tuple[Any, str]:
    """(result, "") or (None, why the call failed): an implementation's fault is a verdict."""
    try:
        return call_with_deadline(fn, timeout_s), ""
    except CallTimeout as exc:
        return None, f"timeout: {exc}"
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
