"""Results planted for the judge's own tests: the truth of any workload, rounded to its dtype,
with chosen elements moved to a chosen multiple of their tolerance, or poisoned.

Everything is derived at run time from the public pieces the judge itself uses (the kind's
reference and tolerance, the workload's expected result for the inputs the callable is given),
so these tests follow a rewritten tolerance and still catch a judge that does not apply it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import ml_dtypes
import numpy as np

import harness
from harness import GridSpec, RotarySpec, Spec, TimestepSpec
from harness.core import checks, kinds
from harness.core.registry import Implementation

DTYPES = ("float32", "float64", "bfloat16", "float16")

#: One small spec per workload (every kind), in a given dtype: offsets, odd widths, partial
#: rotary and extra rows included, so a planted element can land anywhere a kind has.
SPECS: dict[str, Callable[[str], Any]] = {
    "table": lambda dtype: Spec(160, 21, odd="pad", offset=3, dtype=dtype),
    "forward": lambda dtype: Spec(40, 12, layout="concat", dtype=dtype),
    "grid": lambda dtype: GridSpec((5, 6), 16, extra=1, dtype=dtype),
    "cache": lambda dtype: RotarySpec(96, 16, dtype=dtype),
    "apply": lambda dtype: RotarySpec(24, 12, rotary_dim=8, layout="interleaved", dtype=dtype),
    "timestep": lambda dtype: TimestepSpec(tuple(float(t) for t in range(0, 1000, 41)), 18,
                                           dtype=dtype),
}


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` rounded to `dtype` (to nearest), back in float64."""
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def truth(spec: Any, workload: str, inputs: tuple,
          grade: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    """(expected, allowed) of `workload` on `spec` for the inputs its callable was given, by the
    `grade` contract (`harness.tolerance` is the float32 one)."""
    kind = kinds.of(spec)
    bound = harness.tolerance(spec) if grade == "float32" else kind.exact(spec)
    return kind.workload(workload).expected(spec, inputs, harness.reference(spec), bound)


@dataclass(frozen=True)
class Planted:
    """Where an element was moved to, and its error in units of its tolerance after rounding."""

    index: tuple[int, ...]
    ratio: float


def plant(expected: np.ndarray, allowed: np.ndarray, dtype: str, factor: float,
          among: Optional[np.ndarray] = None) -> tuple[np.ndarray, Planted]:
    """The truth rounded to `dtype`, with the one element (`among` those where a mask holds)
    whose error, after rounding to `dtype`, lands closest to `factor` x its tolerance moved
    there (float64 values, all representable)."""
    base = rounded(expected, dtype)
    best = None
    for sign in (1.0, -1.0):
        moved = rounded(expected + sign * factor * allowed, dtype)
        ratio = np.abs(moved - expected) / allowed
        if among is not None:
            ratio = np.where(among, ratio, np.inf)
        flat = int(np.argmin(np.abs(ratio - factor)))
        if best is None or abs(ratio.flat[flat] - factor) < abs(best[1] - factor):
            best = (flat, float(ratio.flat[flat]), float(moved.flat[flat]))
    flat, ratio, value = best
    out = base.copy()
    out.flat[flat] = value
    return out, Planted(tuple(int(i) for i in np.unravel_index(flat, out.shape)), ratio)


def as_result(values: np.ndarray, dtype: str, parts: tuple[str, ...]) -> Any:
    """A fresh result in the output dtype: one array, or a tuple of `parts` arrays."""
    out = values.astype(numpy_dtype(dtype))
    return tuple(out[i].copy() for i in range(len(parts))) if parts else out


def callable_returning(spec: Any, workload: str,
                       make: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Any]:
    """A callable for `check_callable(..., workload=workload)` that returns, fresh on every call,
    `make(expected, allowed)` in the spec's dtype (the tuple of parts where the workload has them)."""
    parts = kinds.of(spec).workload(workload).parts

    def fn(*inputs: Any) -> Any:
        expected, allowed = truth(spec, workload, inputs)
        return as_result(make(expected, allowed), spec.dtype, parts)

    return fn


def judge_here(fn: Callable[..., Any], spec: Any, workload: Optional[str] = None,
               forms: Any = None) -> checks.Check:
    """`check_callable`'s verdict on `fn` (taking the workload's `forms`), judged in this process
    (`checks.check`, the same judge): a mutation tester then sees which of the judge's
    functions each test runs."""
    work = kinds.of(spec).workload(workload or kinds.of(spec).workloads[0].name)

    def build(_spec: Any, *inputs: Any) -> Callable[[], Any]:
        return (lambda: fn(*inputs)) if work.inputs is not None else fn

    impl = Implementation(name="planted", backend="python", device="cpu", build=build,
                          supports_fn=lambda _spec: None, workload=work.name,
                          kind=kinds.of(spec).name, forms=forms)
    return checks.check(impl, spec)
