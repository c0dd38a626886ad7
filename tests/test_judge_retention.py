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
