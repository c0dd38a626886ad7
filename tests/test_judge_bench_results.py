"""The judge's checks of what a bench cell returns: a tuple result judged part by part, and a
stale result named by what was tried (split from test_judge_retention.py: results, not retention)."""

from __future__ import annotations

import numpy as np

from harness.bench import validity
from harness.bench.cells import Cell

def rotary_cell(length: int = 32) -> Cell:
    return Cell("x", "numpy", "cpu", "cache", "neox", length, 16, "float32", 1, kind="rotary")


def cos_sin(c: Cell):
    spec = c.spec()
    angles = np.arange(spec.length)[:, None] * spec.inv_freq()[np.arange(16) % 8][None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def test_bench_takes_a_tuple_result_part_by_part():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    assert validity.output_problem((cos, sin), c) is None
    assert "expected a tuple (cos, sin)" in validity.output_problem(np.stack([cos, sin]), c)
    assert validity.stale_problem((cos, sin), cos_sin(c), True, c) is None
    sin[3, 4] = np.nan
    assert validity.output_problem((cos, sin), c) == \
        "first call: sin: 1 NaN/Inf values (first at position 3, column 4)"


def test_bench_names_a_stale_result_by_what_was_tried():
    c = rotary_cell()
    cos, sin = cos_sin(c)
    assert validity.stale_problem((cos, sin), (cos, sin.copy()), False, c) == \
        "returned the same buffer twice: a cached result, not a builder"
    poisoned = (np.full_like(cos, np.nan), sin)
    assert validity.stale_problem((cos, sin), poisoned, True, c).startswith(
        "after poisoning the first result: cos: ")
    assert validity.stale_problem((cos, sin), poisoned, True, c).endswith(
        "(a cached result, not a builder)")
    assert validity.stale_problem((cos.copy(),), poisoned, False, c).startswith(
        "second call: cos: ")
    assert validity.stale_problem((cos.copy(),), (cos_sin(c)[0],), True, c) == \
        "second call: returned 1 items, expected a tuple (cos, sin)"


