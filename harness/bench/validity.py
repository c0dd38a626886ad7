"""Is a bench cell's result valid, and does its callable compute it? Checked untimed, in the worker.

A cell is timed only when its callable passes three cheap checks, none of which
needs the float64 reference (that is verify's job); one that fails is an
`invalid` row with the reason, never `ok`:

1. **The result** of the first call (`output_problem`) is an array of the
   cell's shape ([length, d_model], or [batch, length, d_model] for `forward`)
   and dtype holding only finite values: `harness.core.checks.well_formed`, the
   cheap half of verify's comparison. None, a list, a wrong shape or dtype and
   NaN are caught here.
2. **A fresh result on every call** (`stale_problem`): the first result is
   poisoned in place (NaN, by its backend's adapter) and the callable called
   again while the first is still held; the second result must be finite, and
   where the first cannot be poisoned (immutable TF and JAX tensors) it must not
   be the same buffer. A callable returning a cached buffer fails.
3. **What setup retains** (`setup_retention`): right after the factory
   returns, before any call, the arrays reachable from the callable - closure
   cells, defaults, a bound method's object, `functools.partial` arguments,
   objects' and classes' attributes and the module globals its code names,
   breadth first - with memory shared between them counted once. A `table`
   builder that keeps at least its table's bytes, and keeps more for a longer
   table, is a lookup: it can return a copy at memcpy speed and pass both
   checks above and verify, so its cell is `invalid` and never recommended
   (the same holds for every workload without inputs: a rotary cache, a grid, a timestep
   embedding).
   The second condition spares builders whose working tables cover one block
   of rows (table-sized only while the table is one block long). Forward
   implementations keep their table by design (the rule is the `table`
   workload's only, and an apply's precomputed cache is its design), and roofs are the harness's own. A recycler
   (`harness.util.recycle`) keeps buffers, but allocates them at call time, so the
   `-recycled` builders keep nothing at setup and are not flagged.

Every row records `retains_bytes`, for tables and forwards alike.
"""

from __future__ import annotations

import functools
import math
import types
from collections import deque
from dataclasses import replace
from typing import Any, Iterable, Iterator, Optional

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:   # NumPy < 2
    from numpy import byte_bounds

from harness.bench.cells import Cell
from harness.core.checks import same_buffer, well_formed
from harness.core.registry import Implementation
from harness.runs.flags import LOOKUP

#: Breadth-first limits of the reachability walk: how deep from the callable, how many
#: objects in all, and how many items of one container (a cache of many tables needs
#: only a few of them to reach a table's bytes).
MAX_DEPTH = 6
MAX_OBJECTS = 20_000
MAX_ITEMS = 256
#: The confirming build of a suspect (see `setup_retention`): GROWTH_LENGTHS times as many
#: rows, at least GROWTH_MIN_LENGTH (past any builder's block of rows); a lookup's retained
#: bytes grow by at least GROWTH_SHARE of its table's growth.
GROWTH_LENGTHS = 4
GROWTH_MIN_LENGTH = 1024
GROWTH_SHARE = 0.5
#: How every lookup's reason ends, so that reports can tell lookups from broken results.

#: Objects that refer to nothing a call could use (and hold no table's worth of data).
_LEAVES = (bool, float, complex, type(None), type, types.ModuleType, types.CodeType,
           types.FrameType, types.BuiltinFunctionType, types.MethodWrapperType,
           types.WrapperDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType)


def output_problem(out: Any, cell: Cell) -> Optional[str]:
    """None when `out` is a finite array of the cell's shape and dtype (or the tuple of its
    workload's parts), else why not."""
    problem, _ = well_formed(out, cell.shape, cell.dtype, cell.work.parts, cell.arrangement,
                             joined=False)
    return None if problem is None else f"first call: {problem}"


#: How far a timed call's result may stray from the first call's before the cell is invalid:
#: the same computation gives the same values (a few ulps where threads split the work).
TIMED_RTOL = 1e-3


def first_result(out: Any, cell: Cell) -> tuple[Optional[str], Optional[np.ndarray]]:
    """`output_problem` and `first_values` from one look at the result (a large one is copied
    and scanned once, not twice)."""
    problem, arr = well_formed(out, cell.shape, cell.dtype, cell.work.parts, cell.arrangement)
    return (None, arr) if problem is None else (f"first call: {problem}", None)


def first_values(out: Any, cell: Cell) -> Optional[np.ndarray]:
    """A well-formed result's values, joined as the reference is (None otherwise), read in
    place where they can be: for a sample taken at once (the call after the timed rounds),
    not kept (the first call's are copied: `first_result`)."""
    _, arr = well_formed(out, cell.shape, cell.dtype, cell.work.parts, cell.arrangement,
                         copy=False)
    return arr


def timed_problem(out: Any, first: Optional[np.ndarray], cell: Cell
                  ) -> tuple[Optional[str], Optional[np.ndarray]]:
    """(None, its values) when a result returned under pytest-benchmark's timer is a finite
    table of the cell's shape and dtype holding the first call's values, else (why not, None):
    a callable that behaves differently when timed is invalid. Its values are read in place
    where they can be (sampled at once, before another call: a 64 MiB table's copy per cell
    was a sixth of a large cell's checks)."""
    problem, arr = well_formed(out, cell.shape, cell.dtype, cell.work.parts, cell.arrangement,
                               copy=False)
    if problem is not None:
        return f"a call under the benchmark's timer: {problem}", None
    if first is None:
        return None, arr
    if arr.dtype == first.dtype and np.array_equal(arr, first):
        return None, arr      # the same values: no float64 copies of a large table to compare
    got, want = arr.astype(np.float64), first.astype(np.float64)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    worst = float(np.abs(got - want).max(initial=0.0))
    if worst > TIMED_RTOL * scale:
        return (f"a call under the benchmark's timer returned other values than its first call "
                f"(max difference {worst:.3g}): it behaves differently when timed"), None
    return None, arr


def stale_problem(first: Any, second: Any, poisoned: bool, cell: Cell) -> Optional[str]:
    """None when `second`, returned by a call made after `first` was poisoned (`poisoned`:
    whether that worked) and while it was still held, is a fresh result; else why not."""
    if not poisoned and same_buffer(first, second):
        return "returned the same buffer twice: a cached result, not a builder"
    problem, _ = well_formed(second, cell.shape, cell.dtype, cell.work.parts, cell.arrangement,
                             joined=False)     # the verdict only: no joined copy to pay for
    if problem is None:
        return None
    if poisoned and "NaN" in problem:
        return f"after poisoning the first result: {problem} (a cached result, not a builder)"
    return f"second call: {problem}"


def setup_retention(impl: Implementation, cell: Cell, fn: Any) -> tuple[int, Optional[str]]:
    """(bytes of arrays reachable from `fn` right after setup, why it is a lookup or None).

    Only an implementation of a workload without inputs (a table, rotary cache, grid or timestep
    embedding; not a roof) can be a lookup. Keeping at least its table's
    bytes makes it a suspect, and a longer build confirms it: a lookup's retained memory grows
    with the table (by at least half as much), while a builder's working tables of one block
    of rows do not, though at lengths up to a block they are table-sized too.
    """
    retained = retained_bytes(fn)
    return retained, lookup_reason(impl, cell, retained)


def lookup_reason(impl: Implementation, cell: Cell, retained: int) -> Optional[str]:
    """Why `impl`, whose callable kept `retained` bytes after setup, is a lookup (None when it
    is not). bench asks only after the first call is timed: the confirming build may compile
    or fill caches that the first call would otherwise pay for."""
    if cell.work.inputs is not None or cell.is_roof or retained < cell.bytes_out:
        return None
    longer = replace(cell, length=max(GROWTH_LENGTHS * cell.length, GROWTH_MIN_LENGTH))
    try:
        spec = longer.spec()
        if impl.supports(spec) is not None:
            return None
        grown = retained_bytes(impl.build(spec))
    except Exception:   # cannot confirm: the benefit of the doubt
        return None
    if grown - retained < GROWTH_SHARE * (longer.bytes_out - cell.bytes_out):
        return None
    return (f"setup retains {_size(retained)} of arrays reachable from the callable "
            f"({retained / cell.bytes_out:.3g}x the table it returns; "
            f"{_size(grown)} for a {longer.length}-row table): {LOOKUP} "
            "(register it as a forward/lookup workload)")


#: An array a builder keeps from its first call, at least this share of its output's bytes,
#: is poisoned before the warm call (`kept_since`).
KEPT_SHARE = 0.5


def reachable_ids(fn: Any) -> set[int]:
    """Identities of the arrays reachable from `fn` now (before the first call)."""
    return {id(a) for a in reachable_arrays(fn)}


def kept_since(fn: Any, cell: Cell, before: set[int]) -> list[Any]:
    """Arrays reachable from `fn` now that were not `before` the first call, each at least
    KEPT_SHARE of the output's bytes: what a builder kept from its first call. A builder that
    computes once and hands back copies keeps its answer there, so the worker poisons these
    before the warm call, whose result must still be right; a recycler's buffers and a working
    buffer are written again by every call and come through. Only for workloads without inputs
    (a forward keeps its table by design), never a roof."""
    if cell.work.inputs is not None or cell.is_roof:
        return []
    return [a for a in reachable_arrays(fn)
            if id(a) not in before and (_nbytes(a) or 0) >= KEPT_SHARE * cell.bytes_out]


# -- what a callable keeps alive ------------------------------------------------------

def retained_bytes(fn: Any) -> int:
    """Bytes of the arrays reachable from `fn`, memory shared between them counted once; a
    container longer than MAX_ITEMS counts its unvisited items as like its visited ones."""
    spans: list[tuple[int, int]] = []
    loose = 0.0
    for array, share in _reachable(fn):
        bounds = _bounds(array) if share == 1.0 else None
        if bounds is None:
            loose += share * (_nbytes(array) or 0)
        else:
            spans.append(bounds)
    return int(loose) + _union(spans)


def reachable_arrays(root: Any) -> Iterator[Any]:
    """Arrays (NumPy, torch, TF, CuPy, JAX ... and bytes-like objects) reachable from `root`,
    breadth first within MAX_DEPTH and MAX_OBJECTS; an array is not looked into."""
    for array, _ in _reachable(root):
        yield array


_CONTAINERS = (dict, list, tuple, set, frozenset, deque)


def _reachable(root: Any) -> Iterator[tuple[Any, float]]:
    """(array, how many arrays like it it stands for): one, or, inside containers of which only
    MAX_ITEMS items were visited, their length over MAX_ITEMS (a table kept as a list of its
    rows is as big as the table)."""
    seen = {id(root)}
    queue = deque([(root, 0, 1.0)])
    visited = 0
    while queue and visited < MAX_OBJECTS:
        obj, depth, share = queue.popleft()
        visited += 1
        if _nbytes(obj) is not None:
            yield obj, share
            continue
        if depth >= MAX_DEPTH:
            continue
        if isinstance(obj, _CONTAINERS):
            share *= max(1.0, len(obj) / MAX_ITEMS)
        for child in _children(obj):
            if id(child) not in seen and (not isinstance(child, _LEAVES) or _user_class(child)):
                seen.add(id(child))
                queue.append((child, depth + 1, share))


def _children(obj: Any) -> Iterable[Any]:
    """What `obj` refers to that a call of it could use."""
    try:
        if isinstance(obj, types.FunctionType):
            return _function_refs(obj)
        if isinstance(obj, types.MethodType):
            return (obj.__func__, obj.__self__)
        if isinstance(obj, functools.partial):
            return (obj.func, *obj.args[:MAX_ITEMS], *list(obj.keywords.values())[:MAX_ITEMS])
        if isinstance(obj, dict):
            return _first(obj.values())
        if isinstance(obj, (list, tuple, set, frozenset, deque)):
            return _first(obj)
        if isinstance(obj, type):   # a class: only the arrays it keeps (a class-level cache),
            return [v for v in _first(vars(obj).values())   # not its names and docstring
                    if _nbytes(v) is not None and not isinstance(v, (str, int))]
        refs = []
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            refs += _first(attrs.values())
        for klass in type(obj).__mro__[:-1]:    # not `object`
            refs += [getattr(obj, slot, None) for slot in _slot_names(klass)]
            refs.append(klass)
        return [r for r in refs if r is not None]
    except Exception:   # an exotic object that refuses introspection keeps its secrets
        return ()


def _function_refs(fn: types.FunctionType) -> list[Any]:
    refs: list[Any] = []
    for cell in fn.__closure__ or ():
        try:
            refs.append(cell.cell_contents)
        except ValueError:   # an empty cell
            pass
    refs += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
    refs += _first(fn.__dict__.values())
    names = _global_names(fn.__code__)
    refs += [fn.__globals__[n] for n in sorted(names) if n in fn.__globals__]
    return refs


def _global_names(code: types.CodeType) -> set[str]:
    """Names the code (and the functions defined in it) may look up as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _user_class(obj: Any) -> bool:
    """A class defined outside the builtins (looked into for arrays it keeps)."""
    return isinstance(obj, type) and obj.__module__ != "builtins"


def _slot_names(klass: type) -> tuple[str, ...]:
    slots = klass.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(s for s in slots if s != "__dict__")


def _first(items: Iterable[Any]) -> list[Any]:
    out = []
    for item in items:
        if len(out) >= MAX_ITEMS:
            break
        out.append(item)
    return out


def _nbytes(obj: Any) -> Optional[int]:
    """Bytes of an array (an object whose type has a shape and a dtype or nbytes), of any object
    exporting a buffer (bytes, bytearray, array.array, mmap ...), or of a str or int (a table's
    bytes decoded as latin-1, or read as one big integer); None for anything else. Attributes
    are read only where the type declares them."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, int) and not isinstance(obj, bool):    # a word's worth is a number
        return (obj.bit_length() + 7) // 8 if obj.bit_length() > 64 else 0
    if isinstance(obj, _LEAVES):
        return None
    if hasattr(type(obj), "shape"):
        return _array_nbytes(obj)
    try:
        with memoryview(obj) as view:
            return view.nbytes
    except Exception:   # exports no buffer
        return None



def _array_nbytes(obj: Any) -> Optional[int]:
    kind = type(obj)
    try:
        if getattr(obj, "is_meta", False) is True:    # a torch meta tensor: a shape, no memory
            return 0
        nbytes = getattr(obj, "nbytes", None) if hasattr(kind, "nbytes") else None
        if isinstance(nbytes, (int, np.integer)):
            return int(nbytes)
        if not hasattr(kind, "dtype"):
            return None
        dtype = obj.dtype
        itemsize = getattr(dtype, "itemsize", None) or getattr(dtype, "size", None)
        shape = [int(n) for n in obj.shape]
        return math.prod(shape) * int(itemsize) if isinstance(itemsize, int) else None
    except Exception:
        return None


def _bounds(array: Any) -> Optional[tuple[int, int]]:
    """[low, high) addresses of an array's memory, where it says (NumPy, the array interfaces,
    torch's data_ptr); None otherwise."""
    try:
        if isinstance(array, np.ndarray):
            low, high = byte_bounds(array)
            return int(low), int(high)
        for interface in ("__array_interface__", "__cuda_array_interface__"):
            spec = getattr(array, interface, None)
            if isinstance(spec, dict) and spec.get("data"):
                start = int(spec["data"][0])
                return start, start + (_nbytes(array) or 0)
        data_ptr = getattr(array, "data_ptr", None)
        if callable(data_ptr):
            start = int(data_ptr())
            return start, start + (_nbytes(array) or 0)
    except Exception:
        return None
    return None


def _union(spans: list[tuple[int, int]]) -> int:
    """Total length of the union of [low, high) spans."""
    total, end = 0, None
    for low, high in sorted(spans):
        if end is None or low >= end:
            total += high - low
            end = high
        elif high > end:
            total += high - end
            end = high
    return total


def _size(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"
