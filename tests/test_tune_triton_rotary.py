"""scripts/tune_triton_rotary.py on the CPU, in Triton's interpreter (`nox -s triton`): every
candidate tile is launched and judged against the float64 reference before it is timed, and a
wrong result is never a candidate. The timings themselves need a GPU (the campaign's `tune`)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "tune_triton_rotary.py"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and TRITON_INTERPRET=1 (`nox -s triton`)")


def _tune():
    spec = importlib.util.spec_from_file_location("tune_triton_rotary", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_candidate_is_judged_before_it_is_timed():
    tune = _tune()
    timed = []

    def timer(fn):
        fn()
        timed.append(fn)
        return 2.0 + len(timed) % 3

    choices = tune.candidates(tiles=(16, 64), rows=(1, 2), warps=(4,))
    rows = tune.tune([(8, 16)], ["float16"], choices, "cpu", timer, heads=(3, 1))
    assert len(rows) == len(choices) * 2 and not any(r["problem"] for r in rows)
    assert len(timed) == len(rows) + 1            # each candidate, and the copy once per shape
    best = tune.best(rows)
    assert len(best) == 2                          # one per (shape, in place)
    for row in best:
        same = [r["us"] for r in rows if (r["seq"], r["head_dim"], r["in_place"])
                == (row["seq"], row["head_dim"], row["in_place"])]
        assert row["us"] == min(same) and row["x_copy"] == row["us"] / row["copy_us"]


def test_a_wrong_result_is_named_and_never_best():
    import torch

    tune = _tune()
    spec, q, k, ids, q64, k64, ids_np = tune.inputs(6, 8, "float32", "cpu")
    problem = tune.judge(spec, q64, ids_np, "cpu")
    assert "x the tolerance" in problem(q)        # q itself is not its rotation
    rows = [dict(seq=6, head_dim=8, dtype="float32", in_place=False, us=1.0, problem="wrong"),
            dict(seq=6, head_dim=8, dtype="float32", in_place=False, us=3.0, problem="")]
    assert tune.best(rows) == [rows[1]]
    assert torch.is_tensor(q) and q.shape == (1, 6, tune.Q_HEADS, 8)
