"""Holes in bench's retention measure (issue 26): a lookup keeps its table as any bytes-like
object, and the confirming build's growth rule decides between a lookup and a builder's block.
"""

from __future__ import annotations

import array
import functools

import numpy as np
import pytest

from harness.bench import validity
from harness.bench.cells import Cell
from harness.core.registry import Implementation
from tests.adversaries import table as correct_table


def cell(length: int, d_model: int = 64) -> Cell:
    return Cell("x", "numpy", "cpu", "table", "paper", length, d_model, "float32", 1)


def impl_of(build) -> Implementation:
    return Implementation(name="x", backend="numpy", device="cpu", build=build,
                          supports_fn=lambda spec: None, workload="table")


def retention(build, c: Cell):
    return validity.setup_retention(impl_of(build), c, build(c.spec()))


def from_bytes(spec, data) -> np.ndarray:
    return np.frombuffer(data, dtype=spec.dtype).reshape(spec.length, spec.d_model).copy()


KEEPERS = {
    "bytes": lambda table: table.tobytes(),
    "bytearray": lambda table: bytearray(table.tobytes()),
    "memoryview": lambda table: memoryview(table.tobytes()),
    "array.array": lambda table: array.array("f", table.ravel()),
    "str": lambda table: table.tobytes().decode("latin-1"),
    "int": lambda table: int.from_bytes(table.tobytes(), "little"),
}


def lookup_kept_as(kind: str):
    """A lookup whose table, computed at setup, hides in a `kind` object; each call rebuilds
    the array from it at memcpy speed."""
    def build(spec):
        kept = KEEPERS[kind](correct_table(spec))
        size = spec.length * spec.d_model * 4

        def call():
            if isinstance(kept, str):
                return from_bytes(spec, kept.encode("latin-1"))
            if isinstance(kept, int):
                return from_bytes(spec, kept.to_bytes(size, "little"))
            return from_bytes(spec, kept)
        return call
    return build


@pytest.mark.parametrize("kind", sorted(KEEPERS))
def test_a_lookup_kept_as_bytes_like_data_is_a_lookup(kind):
    build = lookup_kept_as(kind)
    c = cell(256)
    assert np.array_equal(build(c.spec())(), correct_table(c.spec()))     # a working lookup
    retained, why = retention(build, c)
    assert retained >= c.bytes_out and why is not None and validity.LOOKUP in why, (kind, why)


def test_a_lookup_kept_in_a_partial_as_bytes_is_a_lookup():
    def build(spec):
        return functools.partial(from_bytes, spec, correct_table(spec).tobytes())
    _, why = retention(build, cell(256))
    assert why is not None


ROW_KEEPERS = {
    "a list of row copies": lambda table: [row.copy() for row in table],
    "a tuple of row views": lambda table: tuple(table),
    "a dict of rows": lambda table: {i: row.copy() for i, row in enumerate(table)},
}


@pytest.mark.parametrize("keeper", sorted(ROW_KEEPERS))
@pytest.mark.parametrize("length", [256, 1024])
def test_a_lookup_kept_row_by_row_in_a_long_container_is_a_lookup(keeper, length):
    """Only the first items of a container are visited: the rest count as like them."""
    def build(spec):
        rows = ROW_KEEPERS[keeper](correct_table(spec))
        values = list(rows.values()) if isinstance(rows, dict) else rows
        return lambda: np.stack(values)

    c = cell(length)
    retained, why = retention(build, c)
    assert retained >= c.bytes_out and why is not None, (keeper, retained, why)


# -- the growth rule: a longer build tells a lookup from a builder's block of rows ---------

def block_builder(block_rows: int):
    """Working tables of `block_rows` rows (fewer for a shorter table): table-sized while the
    table is at most a block long, and no larger past it."""
    def build(spec):
        block = correct_table(spec.replace(length=min(block_rows, spec.length)))

        def call():
            out = correct_table(spec)
            out[: block.shape[0]] = block
            return out
        return call
    return build


def test_a_lookup_is_confirmed_by_a_build_of_four_times_the_rows():
    built = []

    def build(spec):
        built.append(spec.length)
        kept = correct_table(spec)
        return lambda: kept.copy()

    c = cell(512)     # 4 x 512 rows is past the 1024-row floor: the growth rule decides
    _, why = retention(build, c)
    assert built == [512, 2048] and why is not None and "2048-row table" in why, why
    built.clear()
    _, why = retention(build, cell(64))
    assert built == [64, 1024] and why is not None and "1024-row table" in why, why


@pytest.mark.parametrize("block_rows, lookup", [
    (1024, False),    # at 4x (2048 rows) it keeps 1024 rows: grew by 512 < half of 1536
    (1280, True),     # grew by exactly half of 1536 rows: the least a lookup grows
    (1400, True),     # grew by 888 rows >= half of 1536: it keeps most of a longer table
    (4096, True),     # at 2048 rows, the whole table: a lookup
])
def test_the_growth_rule_spares_a_block_and_confirms_a_growing_table(block_rows, lookup):
    """At 512 rows each builder keeps the table's bytes (a suspect); the build at 2048 rows
    tells how much more it keeps for 1536 more rows."""
    retained, why = retention(block_builder(block_rows), cell(512))
    assert retained >= cell(512).bytes_out
    assert (why is not None) == lookup, (block_rows, why)


def test_a_builder_that_keeps_less_than_its_table_is_not_built_again():
    built = []

    def build(spec):
        built.append(spec.length)
        half = correct_table(spec.replace(length=spec.length // 2))
        return lambda: np.concatenate([half, correct_table(spec)[spec.length // 2:]])

    assert retention(build, cell(512)) [1] is None and built == [512]


# -- what counts as an array: the type's declarations, never a guess ---------------------

class Shaped:
    """An array-like whose type declares a shape and a dtype (a TF or JAX tensor's), no nbytes."""

    shape = (100, 10)
    dtype = property(lambda self: self.kept_dtype)

    def __init__(self, dtype) -> None:
        self.kept_dtype = dtype


class WithNbytes:
    shape = (3,)
    nbytes = 4096
    dtype = np.dtype("float32")


class Meta(WithNbytes):
    """A torch meta tensor: a shape, a size, and no memory."""

    is_meta = True


class NoDtype:
    shape = (100, 10)


class Undeclared:
    """Attributes set on the instance only (a mock answers anything): not an array."""

    def __init__(self) -> None:
        self.shape, self.dtype, self.nbytes = (100, 10), np.dtype("float64"), 8000


class BadShape:
    shape = property(lambda self: 1 / 0)
    dtype = np.dtype("float32")


@pytest.mark.parametrize("obj, nbytes", [
    (Shaped(np.dtype("float64")), 8000),                         # itemsize
    (Shaped(type("TFDType", (), {"size": 2})()), 2000),         # tf.DType.size
    (Shaped(type("Odd", (), {"itemsize": "4"})()), 0),          # not a size: not counted
    (WithNbytes(), 4096),
    (Meta(), 0),
    (NoDtype(), 0),
    (BadShape(), 0),
])
def test_array_likes_are_measured_by_what_their_type_declares(obj, nbytes):
    assert validity.retained_bytes(lambda: obj) == nbytes


def test_an_instance_that_only_claims_to_be_an_array_is_looked_into_not_counted():
    obj = Undeclared()
    obj.table = np.zeros(50)
    assert validity.retained_bytes(lambda: obj) == obj.table.nbytes


class Slotted:
    __slots__ = ("table", "__dict__")

    def __init__(self, table) -> None:
        self.table = table


class OneSlot:
    __slots__ = "table"

    def __init__(self, table) -> None:
        self.table = table


@pytest.mark.parametrize("holder", [Slotted, OneSlot])
def test_arrays_kept_in_slots_are_counted(holder):
    kept = holder(np.zeros(1000))
    assert validity.retained_bytes(lambda: kept) == 8000
    assert list(validity.reachable_arrays(lambda: kept)) == [kept.table]


# -- what a builder keeps from its first call ---------------------------------------------

def memo_of(rows_kept: int):
    """A builder that keeps `rows_kept` rows of its first answer (all of them: a memo)."""
    def build(spec):
        memo = []

        def call():
            if not memo:
                memo.append(correct_table(spec)[:rows_kept].copy())
            out = correct_table(spec)
            out[:rows_kept] = memo[0]
            return out
        return call
    return build


@pytest.mark.parametrize("rows_kept, found", [(64, True), (32, True), (31, False), (0, False)])
def test_arrays_kept_from_the_first_call_of_half_the_output_or_more_are_found(rows_kept, found):
    c = cell(64)
    fn = memo_of(rows_kept)(c.spec())
    before = validity.reachable_ids(fn)
    fn()
    kept = validity.kept_since(fn, c, before)
    assert bool(kept) == found and all(a.nbytes >= c.bytes_out / 2 for a in kept)


def test_arrays_held_before_the_first_call_are_not_kept_since():
    c = cell(64)
    table = correct_table(c.spec())
    fn = lambda: table.copy()      # noqa: E731 (a lookup: retention's business, not this)
    before = validity.reachable_ids(fn)
    fn()
    assert validity.kept_since(fn, c, before) == []
    assert validity.kept_since(fn, c, set()) == [table]


def test_a_forward_or_a_roof_keeps_what_it_likes():
    forward = Cell("x", "numpy", "cpu", "forward", "paper", 64, 64, "float32", 1, batch=2)
    roof = Cell("x", "numpy", "cpu", "table", "paper", 64, 64, "float32", 1, is_roof=True)
    fn = memo_of(64)(cell(64).spec())
    fn()
    assert validity.kept_since(fn, forward, set()) == []
    assert validity.kept_since(fn, roof, set()) == []
    assert len(validity.kept_since(fn, cell(64), set())) == 1


# -- how far the walk goes, and memory shared between arrays ------------------------------

def nested(array, levels: int):
    for _ in range(levels):
        array = [array]
    return array


def test_the_walk_reaches_max_depth_from_the_callable_and_no_further():
    """The callable is depth 0, its closure cell's list depth 1: MAX_DEPTH - 1 lists deep is the
    last array reached."""
    table = np.zeros(100)
    deepest = nested(table, validity.MAX_DEPTH - 1)
    too_deep = nested(table, validity.MAX_DEPTH)
    assert validity.retained_bytes(lambda: deepest) == table.nbytes
    assert validity.retained_bytes(lambda: too_deep) == 0


def test_containers_within_containers_each_stand_for_their_unvisited_items():
    row = np.zeros(8)                          # 64 bytes
    long_inside = [[row.copy() for _ in range(2 * validity.MAX_ITEMS)] for _ in range(2)]
    assert validity.retained_bytes(lambda: long_inside) == 2 * 2 * validity.MAX_ITEMS * row.nbytes
    long_outside = [[row.copy()] for _ in range(300)]    # 256 visited stand for 300
    assert validity.retained_bytes(lambda: long_outside) == 300 * row.nbytes


def test_an_array_reached_twice_counts_once():
    table = np.zeros(1000)
    assert validity.retained_bytes(lambda: (table, [table], {"t": table})) == table.nbytes


class Interfaced:
    """An array handing out its address the CUDA or NumPy interface way (CuPy, Numba)."""

    def __init__(self, base: np.ndarray, offset: int, nbytes: int, name: str) -> None:
        self.nbytes_ = nbytes
        setattr(self, name, {"data": (base.ctypes.data + offset, False), "shape": (nbytes,)})

    shape = (1,)
    nbytes = property(lambda self: self.nbytes_)
    dtype = np.dtype("uint8")


class Pointed:
    """An array with a data_ptr (torch)."""

    shape = (1,)
    dtype = np.dtype("uint8")
    nbytes = property(lambda self: self.size)

    def __init__(self, base: np.ndarray, offset: int, nbytes: int) -> None:
        self.address, self.size = base.ctypes.data + offset, nbytes

    def data_ptr(self) -> int:
        return self.address


@pytest.mark.parametrize("make", [
    lambda base, off, n: Interfaced(base, off, n, "__array_interface__"),
    lambda base, off, n: Interfaced(base, off, n, "__cuda_array_interface__"),
    lambda base, off, n: Pointed(base, off, n),
])
def test_overlapping_arrays_count_their_union_by_address(make):
    base = np.zeros(3000, np.uint8)        # the memory they describe (not reachable from them)
    a, b, c, d = (make(base, 0, 600), make(base, 400, 600), make(base, 2000, 100),
                  make(base, 100, 200))
    assert validity.retained_bytes(lambda: (a, b)) == 1000         # 0..600 and 400..1000
    assert validity.retained_bytes(lambda: (a, c)) == 700          # apart
    assert validity.retained_bytes(lambda: (a, d)) == 600          # one inside the other


def test_the_lookup_reason_says_how_much_it_keeps():
    def build(spec):
        kept = correct_table(spec)
        return lambda: kept.copy()
    _, why = retention(build, cell(512))
    assert why == ("setup retains 128 KiB of arrays reachable from the callable (1x the table it "
                   "returns; 512 KiB for a 2048-row table): a lookup, not a table build "
                   "(register it as a forward/lookup workload)")
    _, why = retention(build, cell(4096, 64))
    assert "setup retains 1 MiB" in why and "4 MiB for a 16384-row table" in why
