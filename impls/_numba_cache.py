"""`njit` with Numba's on-disk cache, keyed so that kernels built in factories hit it (registers nothing).

Why: without a cache every process pays the compile again (a bench worker, its retries, and
each of verify, conventions and precision: 20-40 s of one core per process for these
kernels). Numba's own `cache=True` misses for them. It keys a closure's entry on a pickle of
the closure's variables, and a compiled function (a dispatcher, an intrinsic) pickles with
an id drawn afresh in every process: a kernel that captures another kernel (a codec's
store, a shared helper) never hits, and each process adds an entry to the cache. Numba
also refuses a kernel that calls numba.get_num_threads() (a dynamic global): the kernels
take the thread count as an argument instead.

Here a captured function is described by what decides its compiled code: a digest of its
source file's content, its bytecode, constants and names, a dispatcher's
options and, recursively, its own closure; anything else by Numba's own pickle. The
caller's own source file is stamped by Numba's index as before. What the compile costs is
paid once per machine and source version; the factories still compile (or load) before
they return, so bench's timed first call never includes it (harness.bench.measure).

Where: one cache for every checkout on the machine (`cache_root`: $PE_HARNESS_NUMBA_CACHE, else
the user's cache folder), under a folder naming its layout (`LAYOUT`: data files named by their
entry's key, where Numba's numbering let two processes compiling at once cross their entries), a
folder per module and version of its source (an old version's
folder stays until the cache is cleared), each entry keyed by what its code is (Numba's
own stamp of the defining file is a digest of its content; ours of a captured function's file
too), never by where a checkout lies or when its files were written. A fresh clone of the
same source loads its kernels instead of compiling them again (minutes of one core for the
whole family, and `nox -s tests` runs in a fresh clone); a clone of other source gets its own
entries. NUMBA_CACHE_DIR, when set, wins, as in Numba; an unwritable folder falls back to
Numba's own places.
"""

from __future__ import annotations

import functools
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
#: Hex digits of a source file's digest naming its version's folder.
VERSION_DIGITS = 16
#: The cache's layout: data files named by their keys (KeyedFile). Entries written before, with
#: numbered data files, may map a key to another entry's code, so they are not read.
LAYOUT = "keyed"


def cache_root() -> str:
    """The machine's cache of compiled kernels, shared by every checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("PE_HARNESS_NUMBA_CACHE") or os.path.join(base, "pe-harness", "numba")


def _cache_class() -> type:
    """FunctionCache with the stable index key in the shared folder (numba imported on first
    use only)."""
    if not _CLASS:
        from numba.core import caching

        class SharedLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
            """A folder per module and version of its source under `cache_root`: Numba keeps
            one index per function, stamped with its file's content, and a version with other
            content resets it, so two versions in one folder (two branches, two worktrees)
            would each compile again after the other ran. The index key then says whether an
            entry is this code's (what it captured)."""

            def __init__(self, py_func: Any, py_file: str) -> None:
                self._py_file, self._lineno = py_file, py_func.__code__.co_firstlineno
                self._path = os.path.join(cache_root(), LAYOUT, py_func.__module__,
                                          _content(py_file)[:VERSION_DIGITS])

            def get_cache_path(self) -> str:
                return self._path

            @classmethod
            def from_function(cls, py_func: Any, py_file: str) -> Any:
                if not os.path.exists(py_file):
                    return None
                locator = cls(py_func, py_file)
                try:
                    locator.ensure_cache_path()
                except OSError:
                    return None          # Numba's own places, next in the list
                return locator

        class SharedImpl(caching.CompileResultCacheImpl):
            _locator_classes = [caching.UserProvidedCacheLocator, SharedLocator,
                                *caching.CompileResultCacheImpl._locator_classes]

        class KeyedFile(caching.IndexDataCacheFile):
            """Numba's index and data files, each entry's data file named by its key's digest.

            Numba numbers a new entry's data file 1, 2, ... past those its index names, so two
            processes compiling two entries of one function at once (two dtypes of a factory's
            kernel: the same signature of uint16 arrays, another codec) both pick number 1; when
            one's index and the other's data are written last, the index maps an entry to the
            other's code, and a float16 cache came back with bfloat16 bits. Named by the key,
            two entries never share a file; a lost index entry is compiled again, never wrong."""

            def save(self, key: Any, data: Any) -> None:
                name = f"{self._index_name[:-len('.nbi')]}.{_key_digest(key)}.nbc"
                overloads = self._load_index()
                if overloads.get(key) != name:
                    overloads[key] = name
                    self._save_index(overloads)
                self._save_data(name, data)

        class StableCache(caching.FunctionCache):
            _impl_class = SharedImpl

            def __init__(self, py_func: Any) -> None:
                super().__init__(py_func)
                self._cache_file = self.file_class(self._cache_path, self._impl.filename_base,
                                             self._impl.locator.get_source_stamp())

            def _index_key(self, sig: Any, codegen: Any) -> tuple:
                return (sig, codegen.magic_tuple(), (stable_key(self._py_func), ""))

        StableCache.file_class = KeyedFile

        _CLASS.append(StableCache)
    return _CLASS[0]


def _key_digest(key: Any) -> str:
    """A short digest of an index key (signature, target, stable key): a data file's name."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:VERSION_DIGITS]


def _function(fn: types.FunctionType, seen: set[int]) -> tuple:
    if id(fn) in seen:                      # a closure that reaches itself
        return ("again", fn.__qualname__)
    seen.add(id(fn))
    cells = tuple(_describe(c.cell_contents, seen) for c in fn.__closure__ or ())
    return (fn.__module__, fn.__qualname__, _content(fn.__code__.co_filename), _code(fn.__code__),
            cells)


def _code(code: types.CodeType) -> tuple:
    consts = tuple(_code(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names)


def _content(path: str) -> str:
    """A digest of a source file's content (what it is, wherever a checkout put it)."""
    try:
        st = os.stat(path)
    except OSError:
        return path
    return _digest(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _digest(path: str, mtime_ns: int, size: int) -> str:   # read again when the file changes
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


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
    if type(value).__module__.startswith("llvmlite.ir"):
        # an IR type or constant captured by an intrinsic's code generator: its text is what it
        # is. Its pickle is not: a type caches its text once a module's IR is written, so the
        # key at lookup (before the compile) and at save (after it) differed, and every process
        # compiled the vector kernels again.
        return ("llvm", type(value).__name__, str(value))
    if isinstance(value, (tuple, list)):
        return tuple(_describe(v, seen) for v in value)
    return ("pickle", hashlib.sha256(dumps(value)).hexdigest())
