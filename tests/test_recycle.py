"""RecycledBuffers: memory comes back only when no array, view, tensor or export holds it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from harness.recycle import RecycledBuffers


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_let_go_memory_is_reused_and_has_the_shape_and_dtype():
    buffers = RecycledBuffers((4, 3), "float32")
    first = buffers.take()
    address = _address(first)
    del first
    again = buffers.take()
    assert _address(again) == address
    assert again.shape == (4, 3) and again.dtype == np.float32 and again.flags.writeable


@pytest.mark.parametrize("holder", [
    lambda a: a[1:],                 # a slice: its base is the kept buffer
    lambda a: a.reshape(-1),
    lambda a: a.T,
    memoryview,
    lambda a: np.asarray(a),
    lambda a: [a],
])
def test_held_memory_is_never_handed_out(holder):
    buffers = RecycledBuffers((4, 3), "float64")
    first = buffers.take()
    held = holder(first)
    address = _address(first)
    del first
    others = [buffers.take() for _ in range(3)]
    assert address not in {_address(o) for o in others}
    del held


def test_a_torch_tensor_holds_its_memory():
    torch = pytest.importorskip("torch")
    buffers = RecycledBuffers((8,), "float32")
    tensor = torch.from_numpy(buffers.take())
    assert _address(buffers.take()) != tensor.data_ptr()


def test_keeps_at_most_keep_buffers_and_then_allocates_plainly():
    buffers = RecycledBuffers((1024,), "float32", keep=2)
    held = [buffers.take() for _ in range(4)]
    assert len({_address(h) for h in held}) == 4
    assert buffers.kept_bytes == 2 * 1024 * 4
    del held
    assert buffers.kept_bytes == 2 * 1024 * 4


def test_keep_must_be_positive():
    with pytest.raises(ValueError, match="keep must be at least 1, got 0"):
        RecycledBuffers((1,), "float32", keep=0)


def test_threads_taking_at_once_never_share_memory():
    rounds, n = 50, 8
    buffers = RecycledBuffers((256,), "float32", keep=2)
    barrier = threading.Barrier(n, timeout=30)
    held_at_once = [[0] * n for _ in range(rounds)]   # [round][thread] -> address

    def worker(i: int) -> None:
        for r in range(rounds):
            held = buffers.take()
            held_at_once[r][i] = _address(held)
            barrier.wait()            # every thread holds its array at this moment
            del held
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(set(addresses)) == n for addresses in held_at_once)
