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


# -- harness.core.handover: the form, the input sets, their conversion -----------------------

def test_a_factory_taking_the_spec_only_gets_its_inputs_at_call_time():
    from harness.core.handover import at_call

    def spec_only(spec): ...
    def with_device(spec, device="cpu"): ...
    def old(spec, x): ...
    def any_number(spec, *inputs): ...
    assert at_call(spec_only) and at_call(with_device) and at_call(lambda spec: None)
    assert not at_call(old) and not at_call(any_number)
    import functools
    assert at_call(functools.partial(with_device, device="cuda"))


def test_each_input_set_is_exact_new_and_keeps_integer_ids_in_range():
    from harness.core.handover import VARIANTS, variant
    q = np.arange(12, dtype=np.float16).reshape(3, 4)
    ids = np.array([[2, 0, 1]], dtype=np.int64)
    assert variant((q, ids), 0) == (q, ids)
    nq, nids = variant((q, ids), 1)
    assert (nq == -q).all() and nq.dtype == q.dtype and nids is ids
    rq, rids = variant((q, ids), 2)
    assert (rq == q[:, ::-1]).all() and rq.flags.c_contiguous and rq.dtype == np.float16
    assert rids.tolist() == [[1, 2, 0]]
    assert variant((None, 3), 2) == (None, 3)
    with pytest.raises(ValueError, match="input variant must be in 0 .. 2"):
        variant((q,), VARIANTS)


def test_negating_in_place_leaves_integers_and_read_only_arrays():
    from harness.core.handover import negate_in_place
    x, ids = np.ones(3, np.float32), np.arange(3)
    frozen = np.ones(2)
    frozen.flags.writeable = False
    assert negate_in_place((x, ids, frozen)) and x.tolist() == [-1, -1, -1]
    assert ids.tolist() == [0, 1, 2] and frozen.tolist() == [1, 1]
    assert not negate_in_place((ids, frozen))


@pytest.mark.parametrize("dtype, held", [("float16", np.float16), ("float32", np.float32),
                                         ("float64", np.float64), ("bfloat16", np.float32)])
def test_a_host_backend_is_handed_new_numpy_arrays_in_its_dtype(dtype, held):
    from harness.core.handover import convert
    x, ids = np.linspace(-1, 1, 6).astype(np.float32), np.arange(3)
    hx, hids = convert((x, ids), "numpy", dtype, "cpu")
    assert hx.dtype == held and not np.shares_memory(hx, x)
    assert hids.dtype == ids.dtype and not np.shares_memory(hids, ids)


def test_torch_is_handed_tensors_of_the_spec_dtype_and_int64_ids():
    torch = pytest.importorskip("torch")
    from harness.core.handover import convert
    x, ids = np.linspace(-1, 1, 6).astype(np.float32), np.arange(3, dtype=np.int32)
    hx, hids = convert((x, ids), "torch", "bfloat16", "cpu")
    assert hx.dtype == torch.bfloat16 and hids.dtype == torch.int64
    hx, _ = convert((x, ids), "numba", "bfloat16", "cpu")     # Numba's bfloat16: a torch tensor
    assert hx.dtype == torch.bfloat16


def test_handed_inputs_are_negated_where_they_lie_and_an_immutable_one_says_so():
    """What bench does after the timed rounds: the same objects now hold the negated set (a
    cache keyed on their identity shows), integer ids untouched; TensorFlow's tensors cannot
    be, and the caller then converts a fresh set."""
    from harness.core.handover import convert, negate_handed, variant
    args = (np.linspace(-1, 1, 6).astype(np.float32), np.arange(3))
    handed = convert(args, "numpy", "float32", "cpu")
    kept = handed
    assert negate_handed(handed, args) and handed is kept
    np.testing.assert_array_equal(handed[0], variant(args, 1)[0])
    assert handed[1].tolist() == [0, 1, 2]
    torch = pytest.importorskip("torch")
    as_torch = convert(args, "torch", "bfloat16", "cpu")
    assert negate_handed(as_torch, args) and as_torch[0].dtype == torch.bfloat16
    want = -torch.from_numpy(args[0]).to(torch.bfloat16).float()
    assert torch.equal(as_torch[0].float(), want)
    frozen = (np.ones(2),)
    frozen[0].flags.writeable = False
    assert not negate_handed(frozen, (np.ones(2),))
