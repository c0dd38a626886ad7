"""How a workload's inputs reach an implementation: at call time, converted by the harness.

A forward's `x` or an apply's q, k and positions are inputs. An implementation that got them
when it was built could compute its answer there (or on its first call) and hand back copies,
timed as a memcpy, and pass any check that calls it on those inputs only. So the factory of
a workload with inputs takes the spec only and returns `fn(*inputs)` (`at_call`): the harness
converts each set of NumPy inputs to the implementation's backend (its adapter's `inputs`,
or NumPy for a host backend), outside any timed region, and hands a fresh set to every call
verify makes: the first as drawn (`variant` 0), the second negated (1), the third reversed
along the last axis with the position ids rolled (2). Each result is judged against the
reference for the inputs it was given, so a result computed once cannot pass.

The older form, a factory taking the inputs after the spec and returning a zero-argument
callable, still works for one release (deprecated): after its calls verify negates the inputs
it was given, in place, and calls once more; a result that does not follow them (computed, or
its inputs copied, at build time) fails.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from harness import backends
from harness.backends.host import host_input

#: How many input sets verify hands a call-time implementation, one per call.
VARIANTS = 3
#: The variant the build-time form's inputs are changed into, in place, before its last call
NEGATED = 1


def at_call(factory: Callable[..., Any]) -> bool:
    """Whether `factory` takes the spec only (the call-time form: its callable takes the
    inputs); a factory that takes more positional arguments, or any number, gets them at build
    time (the deprecated form)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):       # a builtin or C callable: the old form, as before
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty]
    return len(required) <= 1


def variant(args: tuple, n: int) -> tuple:
    """Input set `n` made from `args` (new arrays; exact in every dtype, so the values stay
    representable): 0 as given, 1 every float input negated, 2 every float input reversed
    along its last axis and every integer one (position ids) rolled by one along it."""
    if n == 0:
        return args
    if n not in range(VARIANTS):
        raise ValueError(f"input variant must be in 0 .. {VARIANTS - 1}, got {n}")
    return tuple(_changed(a, n) for a in args)


def _changed(arg: Any, n: int) -> Any:
    if not isinstance(arg, np.ndarray) or arg.ndim == 0:
        return arg
    if arg.dtype.kind == "f":
        return np.negative(arg) if n == 1 else np.ascontiguousarray(arg[..., ::-1])
    if arg.dtype.kind in "iu" and n == 2:
        return np.roll(arg, 1, axis=-1)
    return arg


def negate_in_place(args: tuple) -> bool:
    """Negate the float NumPy inputs in place (what `variant(args, NEGATED)` makes); whether
    there were any to negate."""
    changed = False
    for arg in args:
        if isinstance(arg, np.ndarray) and arg.dtype.kind == "f" and arg.flags.writeable:
            np.negative(arg, out=arg)
            changed = True
    return changed


def convert(args: tuple, backend: str, dtype: str, device: str) -> tuple:
    """`args` as `backend`'s arrays on `device` (its adapter's `inputs`; NumPy by default), a new
    object each: what one call of a call-time implementation is handed."""
    make = backends.get(backend).inputs or host_input
    return tuple(make(a, dtype, device) if isinstance(a, np.ndarray) else a for a in args)


def negate_handed(handed: tuple, args: tuple) -> bool:
    """Negate, where they lie, the handed inputs whose NumPy originals in `args` are floats (by
    their backend's `negate`), so the same objects hold input set NEGATED; whether every one
    could be (False: an immutable one, TensorFlow's or JAX's, is left as it was)."""
    done = True
    for given, arg in zip(args, handed):
        if isinstance(given, np.ndarray) and given.dtype.kind == "f":
            owner = backends.owner(arg)
            done = bool(owner is not None and owner.negate is not None and owner.negate(arg)
                        ) and done
    return done


def bound(impl: Any, spec: Any, args: tuple) -> Callable[[], Any]:
    """`impl` built on `spec` as one zero-argument call on `args`, whichever form it is (tests,
    one-off calls): a call-time implementation is handed them converted to its backend, once,
    or, when it declares in_place, afresh at every call."""
    if not (args and impl.inputs_at_call):
        return impl.build(spec, *args)
    fn = impl.build(spec)
    if getattr(impl.forms_declared, "in_place", False):
        return lambda: fn(*convert(args, impl.backend, spec.dtype, impl.device))
    handed = convert(args, impl.backend, spec.dtype, impl.device)
    return lambda: fn(*handed)
