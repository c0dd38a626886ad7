"""The inputs rule end to end in the judge's own functions (the mutation survivors that changed
an outcome: docs/mutants.md): the flag kept, counted and summed; an apply cell's position ids
left alone when its float inputs are negated; the inputs bench builds in the dtype and batch
asked for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.bench import fingerprint
from harness.core.kinds.rotary.apply import representable, round_to_bfloat16
from harness.core.kinds.table import forward_input
from harness.core.kinds.table.spec import Spec
from harness.runs import flags


def row(impl: str, **extra) -> dict:
    return {"impl": impl, "workload": "forward", "length": 64, "d_model": 64, "dtype": "float32",
            "threads": 1, "median_s": 1e-3, "status": "ok", **extra}


def test_an_inputs_flag_is_kept_with_the_others_counted_and_named_in_the_summary():
    note = f"{fingerprint.INPUTS_FLAG}its result did not follow its inputs"
    frame = pd.DataFrame([row("copies", inputs=note), row("follows", inputs=None)])
    assert list(flags.flags(frame)) == [note, ""]
    assert flags.kinds(frame.assign(flags=flags.flags(frame)))["inputs"] == 1
    assert flags.summary(frame).endswith(
        "1 whose result did not follow its inputs (`flags` in bench.csv)")


def test_only_float_inputs_are_negated_never_an_apply_cells_position_ids():
    q, k = np.ones((1, 2, 4, 8), np.float32), np.full((1, 2, 4, 8), 2.0, np.float32)
    ids = np.arange(4, dtype=np.int64)
    nq, nk, nids = fingerprint.negated((q, k, ids))
    assert (nq == -q).all() and (nk == -k).all() and nids is ids
    assert fingerprint.negated((None, 3))[1] == 3


@pytest.mark.parametrize("dtype, given", [("float16", np.float16), ("float32", np.float32),
                                          ("float64", np.float64), ("bfloat16", np.float32)])
@pytest.mark.parametrize("batch", [1, 3])
def test_a_forward_gets_x_of_the_batch_asked_for_in_its_dtype(dtype, given, batch):
    x = forward_input(Spec(16, 8, dtype=dtype), batch)
    assert x.shape == (batch, 16, 8) and x.dtype == given


def test_apply_inputs_are_rounded_to_their_dtype_once_and_only_there():
    x = np.random.default_rng(0).standard_normal(1000)
    bf = representable(x, "bfloat16")
    assert bf.dtype == np.float32 and (bf == round_to_bfloat16(x.astype(np.float32))).all()
    assert not (bf == x.astype(np.float32)).all()                # bfloat16 is coarser
    half = representable(x, "float16")
    assert half.dtype == np.float32 and (half == x.astype(np.float16)).all()
    single = representable(x, "float32")
    assert (single == x.astype(np.float32)).all() and not (single == bf).all()
    assert representable(x, "float64").dtype == np.float64
