"""The corners of bench's retention walk (issue 26): cycles, the object budget, what lies at the
depth limit, arrays kept by a class or a base class's slots, globals named by nested functions,
and the size of the values a table can hide in (a big int, an array-like that lies).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.bench import validity

_KEPT_BY_OUTER = np.zeros(100)
_KEPT_BY_INNER = np.zeros(300)


def test_a_cycle_is_walked_once_and_an_array_reached_twice_found_once():
    table = np.zeros(10)
    loop: list = [table]
    loop.append(loop)
    holder = type("Holder", (), {})()
    holder.me, holder.table = holder, table
    for root in (loop, holder, (table, [table], {"t": table})):
        assert list(validity.reachable_arrays(root)) == [table]


@pytest.mark.parametrize("budget, found", [(1, 0), (2, 1), (3, 2), (6, 4)])
def test_the_walk_stops_after_its_object_budget(monkeypatch, budget, found):
    """The root is the first object visited, then its items in order."""
    monkeypatch.setattr(validity, "MAX_OBJECTS", budget)
    arrays = [np.zeros(1) for _ in range(4)]
    assert list(validity.reachable_arrays(arrays)) == arrays[:found]


def test_an_object_at_the_depth_limit_ends_its_branch_not_the_walk():
    table = np.zeros(100)

    def chain(leaf, levels):
        for _ in range(levels):
            leaf = [leaf]
        return leaf
    # both end at MAX_DEPTH: a list (not looked into) first, then an array (still counted)
    root = [chain([np.zeros(5)], validity.MAX_DEPTH - 1), chain(table, validity.MAX_DEPTH - 1)]
    assert list(validity.reachable_arrays(root)) == [table]


class KeepsItsTable:
    """A callable whose class holds the table (a class-level cache)."""

    table = np.zeros(500)
    name = "not counted: a class's names and docstring"

    def __call__(self):
        return self.table.copy()


class Base:
    __slots__ = ("unset", "table")


class Derived(Base):
    __slots__ = ()


def test_arrays_kept_by_a_class_or_in_a_base_class_slot_are_found():
    assert validity.retained_bytes(KeepsItsTable()) == KeepsItsTable.table.nbytes
    kept = Derived()
    kept.table = np.zeros(50)          # `unset` stays empty: no value, not an error
    assert list(validity.reachable_arrays(kept)) == [kept.table]


def _outer():
    inner = lambda: _KEPT_BY_INNER     # noqa: E731 (a nested function names its own global)
    return _KEPT_BY_OUTER, inner


def test_the_globals_of_a_function_and_of_the_functions_defined_in_it_are_reached():
    assert validity.retained_bytes(_outer) == _KEPT_BY_OUTER.nbytes + _KEPT_BY_INNER.nbytes


@pytest.mark.parametrize("value, nbytes", [
    (1 << 63, 0),          # 64 bits: a word, a number
    (1 << 64, 9),          # 65 bits: 9 bytes of data
    (1 << 71, 9),
    (1 << 72, 10),
    ("abc", 3),
])
def test_a_big_int_or_a_str_is_as_many_bytes_as_it_holds(value, nbytes):
    got = validity._nbytes(value)
    assert got == nbytes and type(got) is int


class Lazy:
    """A shaped array-like whose type declares `nbytes`, which it cannot answer yet."""

    shape = (10,)
    dtype = np.dtype("float32")

    @property
    def nbytes(self):
        raise AttributeError("not materialised")


class Claims:
    """Its type is shaped; `nbytes` is set on the instance only (not what the type declares)."""

    shape = (10,)
    dtype = np.dtype("float32")

    def __init__(self) -> None:
        self.nbytes = 10 ** 9


@pytest.mark.parametrize("obj", [Lazy(), Claims()])
def test_an_array_like_without_a_declared_nbytes_is_its_shape_times_its_itemsize(obj):
    assert validity._nbytes(obj) == 40


def test_a_lookup_reason_gives_sizes_in_their_unit():
    sizes = (512, 3 * 2**10, 5 * 2**20, 3 * 2**30)
    assert [validity._size(n) for n in sizes] == ["512 B", "3 KiB", "5 MiB", "3 GiB"]
