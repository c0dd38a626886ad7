"""`njit` with Numba's on-disk cache, keyed so that kernels built in factories hit it (registers nothing).

Why: without a cache every process pays the compile again (a bench worker, its retries, and
each of verify, conventions and precision: 20-40 s of one core per process for these
kernels). Numba's own `cache=True` misses for them. It keys a closure's entry on a pickle of
the closure's variables, and a compiled function (a dispatcher, an intrinsic) pickles with
an id drawn afresh in every process: a kernel that captures another kernel (a codec's
store, a shared helper) never hits, and each process adds an entry to the cache. Numba
also refuses a kernel that calls numba.get_num_threads() (a dynamic global): the kernels
take the thread count as an argument instead.

Here a captured function is described by what decides its compiled code: its source file's
stamp (modification time and size), its bytecode, constants and names, a dispatcher's
options and, recursively, its own closure; anything else by Numba's own pickle. The
caller's own source file is stamped by Numba's index as before. What the compile costs is
paid once per machine and source version; the factories still compile (or load) before
they return, so bench's timed first call never includes it (harness.bench.measure).
"""

from __future__ import annotations

import hashlib
import os
import types
from typing import Any, Callable


def njit(**options: Any) -> Callable[..., Any]:
    """numba.njit(**options) cached on disk under a stable key; use as `@njit` or `@njit(**more)`."""
    def decorate(fn: Any = None, **more: Any) -> Any:
        if fn is None:
            return lambda f: decorate(f, **more)
        return cached(_numba().njit(fn, cache=False, **options, **more))
    return decorate


def cached(dispatcher: Any) -> Any:
    """`dispatcher` with an on-disk cache keyed by `stable_key`."""
    dispatcher._cache = _cache_class()(dispatcher.py_func)
    return dispatcher


def stable_key(fn: types.FunctionType) -> str:
    """A digest of what decides `fn`'s compiled code, equal in every process."""
    return hashlib.sha256(repr(_function(fn, set())).encode()).hexdigest()


def _numba() -> Any:
    import numba

    return numba


_CLASS: list[type] = []


def _cache_class() -> type:
    """FunctionCache with the stable index key (numba imported on first use only)."""
    if not _CLASS:
        from numba.core.caching import FunctionCache

        class StableCache(FunctionCache):
            def _index_key(self, sig: Any, codegen: Any) -> tuple:
                return (sig, codegen.magic_tuple(), (stable_key(self._py_func), ""))

        _CLASS.append(StableCache)
    return _CLASS[0]


def _function(fn: types.FunctionType, seen: set[int]) -> tuple:
    if id(fn) in seen:                      # a closure that reaches itself
        return ("again", fn.__qualname__)
    seen.add(id(fn))
    cells = tuple(_describe(c.cell_contents, seen) for c in fn.__closure__ or ())
    return (fn.__module__, fn.__qualname__, _stamp(fn.__code__.co_filename), _code(fn.__code__),
            cells)


def _code(code: types.CodeType) -> tuple:
    consts = tuple(_code(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names)


def _stamp(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (path,)
    return (path, st.st_mtime_ns, st.st_size)


def _describe(value: Any, seen: set[int]) -> Any:
    from numba.core.dispatcher import Dispatcher
    from numba.core.extending import _Intrinsic
    from numba.core.serialize import dumps

    if isinstance(value, Dispatcher):
        return ("dispatcher", sorted(map(repr, value.targetoptions.items())),
                _function(value.py_func, seen))
    if isinstance(value, _Intrinsic):
        return ("intrinsic", value._name, _function(value._defn, seen))
    if isinstance(value, types.FunctionType):
        return ("function", _function(value, seen))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, (tuple, list)):
        return tuple(_describe(v, seen) for v in value)
    return ("pickle", hashlib.sha256(dumps(value)).hexdigest())
