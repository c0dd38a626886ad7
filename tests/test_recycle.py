"""RecycledBuffers: memory comes back only when no array, view, tensor or export holds it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from harness.util import recycle
from harness.util.recycle import RecycledBuffers


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
    kept = {_address(h) for h in held[:2]}   # the first two were kept, the others plain
    del held
    again = [buffers.take() for _ in range(2)]
    assert {_address(a) for a in again} == kept


def test_keep_must_be_positive():
    with pytest.raises(ValueError, match="keep must be at least 1, got 0"):
        RecycledBuffers((1,), "float32", keep=0)


def test_the_idle_check_and_the_hand_out_are_one_step(monkeypatch):
    """Two threads that both see a buffer idle must not both get it. The first thread is held
    between its check and its hand-out until the second has checked too (or 0.5 s passed):
    without the lock both would see the kept buffer idle and share it."""
    buffers = RecycledBuffers((16,), "float32", keep=1)
    buffers.take()                         # one kept buffer, let go at once: idle
    meet = threading.Barrier(2, timeout=0.5)
    count = recycle._refcounts

    def count_then_wait(kept):
        counts = count(kept)
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            pass                           # the other thread is blocked on the lock
        return counts

    monkeypatch.setattr(recycle, "_refcounts", count_then_wait)
    got: list = [None, None]

    def take(i: int) -> None:
        got[i] = buffers.take()

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not np.shares_memory(got[0], got[1])


def test_new_buffers_come_from_the_given_allocator():
    made: list[int] = []   # addresses only: holding the arrays would keep them busy

    def allocate() -> np.ndarray:
        buffer = np.full((3,), 7.0, "float32")
        made.append(_address(buffer))
        return buffer

    buffers = RecycledBuffers((3,), "float32", allocate=allocate)
    first = buffers.take()
    assert made == [_address(first)] and (first == 7.0).all()
    del first
    buffers.take()
    assert len(made) == 1   # reused, not allocated again


def test_aligned_views_are_handed_out_and_their_holders_counted_on_the_owner():
    """With `view` (an aligned part of a larger owner, harness.util.memory.aligned), a table is
    32-byte aligned, and one held through a view of it is never handed out again."""
    from harness.util.memory import aligned, aligned_owner

    shape = (64, 24)
    buffers = RecycledBuffers(shape, "float32", allocate=lambda: aligned_owner(shape, "float32", 32),
                              view=lambda owner: aligned(owner, shape, "float32", 32))
    first = buffers.take()
    assert first.shape == shape and first.dtype == np.float32 and _address(first) % 32 == 0
    held, address = first[3:], _address(first)
    del first
    second = buffers.take()
    assert _address(second) != address
    del held, second
    assert _address(buffers.take()) == address
