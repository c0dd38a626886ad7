"""A worker draws a shape's inputs once and hands every cell its own copy of them."""

from __future__ import annotations

import numpy as np

from harness.bench.cells import Cell
from harness.bench.inputs import Inputs


def apply_cell(dtype: str = "float32", length: int = 32) -> Cell:
    return Cell("x", "numpy", "cpu", "apply", "neox", length, 16, dtype, 1, batch=1, heads=2,
                kind="rotary")


def test_a_shapes_inputs_are_drawn_once_and_each_cell_gets_its_own_copy():
    made = Inputs()
    c = apply_cell()
    first = made.arguments(c, c.spec())
    want = c.work.arguments(c.spec(), c.batch, c.heads)
    for got, fresh in zip(first, want):
        np.testing.assert_array_equal(got, fresh)
    for a in first:
        if a.dtype.kind == "f":
            np.negative(a, out=a)           # what bench does after the timed rounds
    again = made.arguments(c, c.spec())
    assert made.made == 1
    for got, fresh, old in zip(again, want, first):
        np.testing.assert_array_equal(got, fresh)
        assert not np.shares_memory(got, old)
    other = apply_cell("bfloat16")
    made.arguments(other, other.spec())
    assert made.made == 2


def test_the_kept_inputs_are_bounded_and_a_workload_without_inputs_has_none():
    made = Inputs(max_bytes=1)
    for dtype in ("float32", "float16", "float32"):
        c = apply_cell(dtype)
        made.arguments(c, c.spec())
    assert made.made == 3 and len(made.kept) == 1
    table = Cell("x", "numpy", "cpu", "table", "concat", 16, 8, "float32", 1)
    assert made.arguments(table, table.spec()) == ()
