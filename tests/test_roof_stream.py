"""The streaming-store fill roof writes every byte of any buffer, and stands beside every write."""

from __future__ import annotations

import numpy as np
import pytest

from harness.bench.roof_stream import streaming_fill
from harness.bench.roofs import roofs_for
from harness.core.spec import Spec

ONE = {"float32": np.float32(1), "float64": np.float64(1), "float16": np.float16(1),
       "bfloat16": np.uint16(0x3F80)}


@pytest.mark.parametrize("dtype", list(ONE))
def test_every_element_is_written_at_any_alignment_and_length(dtype):
    write = streaming_fill(Spec(16, 8, dtype=dtype))
    host = np.dtype(np.uint16 if dtype == "bfloat16" else dtype)
    for n in (1, 3, 17, 1000, 4099):
        raw = np.empty(n * host.itemsize + 64, np.uint8)
        for skip in (0, host.itemsize, 16, 24):   # starts off and on the 32-byte boundary
            raw[:] = 0xAB        # a byte left unwritten keeps it, in every dtype
            out = raw[skip:skip + n * host.itemsize].view(host)
            write(out)
            assert (out == ONE[dtype]).all(), (n, skip, np.flatnonzero(out != ONE[dtype])[:5])
            assert (raw[:skip] == 0xAB).all() and (raw[skip + out.nbytes:] == 0xAB).all(), \
                "wrote outside the buffer"


def test_it_is_a_roof_of_every_cpu_write():
    for workload in ("table", "cache", "grid", "timestep"):
        names = {r.name for r in roofs_for(workload, "cpu")}
        assert any(n.startswith("roof-stream-fill") for n in names), (workload, names)
        assert any(n.startswith("roof-recycled-stream-fill") for n in names), (workload, names)


def test_it_stands_beside_outputs_past_the_cache_only():
    from harness.bench.roofs import STREAM_FROM_BYTES, streamed_outputs

    large = Spec(STREAM_FROM_BYTES // (16 * 2), 16, dtype="bfloat16")   # exactly the threshold
    assert streamed_outputs(large) is None
    assert "under" in streamed_outputs(Spec(1024, 16, dtype="float64"))
    assert streamed_outputs(Spec(1 << 20, 16, dtype="float32")) is None
