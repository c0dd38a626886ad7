"""Check a plain callable against the float64 reference, unregistered: for a user's own tests and CI.

`check_callable(fn, spec)` wraps `fn` in a throwaway `Implementation` (never
added to the registry), calls it as `verify` calls an implementation
(harness.core.observe: in the caller's own thread, so torch.no_grad or the
current CUDA stream apply, under a deadline) and has the copies of its
results judged by `checks.judge`, the one path by which `verify` calls
anything correct, in a judge process of its own (harness.core.apart) that
the callable cannot have patched. So a test in a user's suite applies the
same shape, dtype, finiteness, angle-scaled tolerance and poison checks as
`verify`, and cannot drift from it. `assert_callable` is the same check as a
pytest assertion whose message says what went wrong and where.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from harness.core import apart, kinds
from harness.core.catalog import Entry
from harness.core.checks import Check, inputs
from harness.core.contract import at_least
from harness.core.observe import observe
from harness.core.registry import Implementation
from harness.util.exitcodes import UsageError

#: The backend label of a checked callable: nothing to import, no threads to pin. Only `list`
#: and bench care about backends; the checks judge the returned array by its own type.
BACKEND = "python"


def check_callable(fn: Callable[..., Any], spec: Any, *, workload: Optional[str] = None,
                   name: Optional[str] = None, timeout_s: float = 120.0) -> Check:
    """Judge `fn` on `spec` exactly as `verify` judges a registered implementation.

    `fn` is what bench would time: for `workload="table"` a zero-argument callable that
    builds the `[length, d_model]` table of `spec` (NumPy, torch, TensorFlow, JAX or CuPy),
    for `workload="forward"` a callable `fn(x) -> x + PE` with `x` of shape
    `[batch, length, d_model]`; for another kind's spec (`RotarySpec`, `GridSpec`,
    `TimestepSpec`) its first workload by default (`workload="cache"` returns the pair
    `(cos, sin)`, `"apply"` is `fn(q, k, positions) -> (q_rot, k_rot)`, in the form the spec asks
    for: its qk_layout, kv_heads and position_ids). It is called three times: its results are poisoned (NaN)
    in between, so a callable that returns a cached table fails. Returns the `Check`
    (`status` "pass", "fail" or "error", `grade` "exact", "float32" or "fail" (the contract
    met, harness/core/contract.py), `reason`, `max_abs_err`, `tol`, `err_ratio`, `worst_pos`,
    `worst_col`); an exception (SystemExit included) or a hang of `fn` is an "error", never
    raised. `timeout_s` may be `math.inf`; a finite one interrupts `fn` by SIGALRM when called
    from the main thread, and elsewhere (no signals there) reports an overrun as an error once
    `fn` returns.
    """
    impl = _wrap(fn, spec, workload, name)
    if not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise UsageError(f"timeout_s must be > 0 seconds (inf for no limit), got {timeout_s!r}")
    args = inputs(impl.workload, spec)
    seen = observe(impl, spec, args, timeout_s)
    return apart.verdict(Entry(impl.name, impl.backend, impl.device, impl.kind, impl.workload,
                               impl.origin), spec, args, seen)


def assert_callable(fn: Callable[..., Any], spec: Any, *, workload: Optional[str] = None,
                    name: Optional[str] = None, timeout_s: float = 120.0,
                    require: str = "float32") -> Check:
    """`check_callable`, raising AssertionError unless it passes at the `require`d grade or
    better ("float32", the default, or "exact"); returns the passing Check."""
    at_least("exact", require)            # ValueError for a grade that does not exist
    result = check_callable(fn, spec, workload=workload, name=name, timeout_s=timeout_s)
    if result.status != "pass" or not at_least(result.grade, require):
        below = "" if result.status != "pass" else f" (graded {result.grade}, {require} required)"
        raise AssertionError(describe(result) + below)
    return result


def describe(result: Check) -> str:
    """One line: which callable, which spec, the verdict and its evidence."""
    line = f"{result.impl} on {result.spec.short()}: {result.status}"
    if result.status == "pass":
        line += f" ({result.grade})"
    if result.reason:
        line += f": {result.reason}"
    if math.isfinite(result.max_abs_err):
        line += (f" (max abs err {result.max_abs_err:.3g}, {result.err_ratio:.3g}x its tolerance, "
                 f"worst at position {result.worst_pos}, column {result.worst_col})")
    return line


def _wrap(fn: Callable[..., Any], spec: Any, workload: Optional[str],
          name: Optional[str]) -> Implementation:
    """A one-off Implementation whose factory hands back `fn` (given its inputs, if any, at
    every call: harness.core.handover)."""
    try:
        kind = kinds.of(spec)
    except TypeError:
        raise TypeError(f"spec must be a harness.Spec, RotarySpec, GridSpec or TimestepSpec, "
                        f"got {type(spec).__name__}") from None
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    work = kind.workload(workload or kind.workloads[0].name)
    label = name or getattr(fn, "__qualname__", None) or type(fn).__name__

    def build(_spec: Any) -> Callable[..., Any]:   # a workload's inputs come at every call
        return fn

    return Implementation(name=label, backend=BACKEND, device="cpu", build=build,
                          supports_fn=lambda _spec: None, workload=work.name, kind=kind.name,
                          origin=getattr(fn, "__module__", None) or "?",
                          forms=work.forms_of(spec) if work.forms_of is not None else None)
