"""Checkpoints as people have them: safetensors, Keras .weights.h5, torch .bin, and a pickle
that would run code, refused before it runs."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from harness import Spec, reference
from harness.identify.files import open_file


def write_safetensors(path, tensors: dict, bf16: tuple = ()) -> None:
    """The format by its specification: u64 header length, JSON header, raw data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, array in tensors.items():
        if name in bf16:
            raw = (np.asarray(array, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
            dtype = "BF16"
        else:
            raw = np.ascontiguousarray(array, "<f4").tobytes()
            dtype = "F32"
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_safetensors_tensors_are_each_named_and_bf16_is_widened(tmp_path):
    table = reference(Spec(64, 32)).astype(np.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"inv_freq": np.ones(16, np.float32),
                             "embed_positions.weight": table, "pe_bf16": table}, bf16=("pe_bf16",))
    stored = {s.name: np.asarray(s.read()) for s in open_file(path)}
    assert list(stored) == ["inv_freq", "embed_positions.weight", "pe_bf16"]
    np.testing.assert_array_equal(stored["embed_positions.weight"], table)
    assert np.abs(stored["pe_bf16"] - table).max() < 2 ** -7     # bfloat16 keeps 8 bits
    assert [s.name for s in open_file(path, key="pe_bf16")] == ["pe_bf16"]
    # widened to be read, judged at the precision it was stored in
    assert {s.name: s.dtype for s in open_file(path)} == {
        "inv_freq": None, "embed_positions.weight": None, "pe_bf16": "bfloat16"}


def test_a_truncated_safetensors_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "cut.safetensors"
    write_safetensors(path, {"pe": np.ones((8, 8), np.float32)})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"cut.safetensors.*outside the file's data"):
        open_file(path)
    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 4)
    with pytest.raises(ValueError, match="junk.safetensors.*shorter than"):
        open_file(tmp_path / "junk.safetensors")


def test_keras_weights_h5_datasets_are_read_by_path(tmp_path):
    h5py = pytest.importorskip("h5py")
    table = reference(Spec(16, 8)).astype(np.float32)
    path = tmp_path / "model.weights.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("layers/sine_position_encoding/vars/0", data=table)
        f.create_dataset("layers/dense/vars/0", data=np.ones((8, 4), np.float32))
        f.create_dataset("metadata/name", data="not a tensor")
    stored = {s.name: s.read() for s in open_file(path)}
    assert set(stored) == {"layers/sine_position_encoding/vars/0", "layers/dense/vars/0"}
    np.testing.assert_array_equal(stored["layers/sine_position_encoding/vars/0"], table)


def test_a_torch_bin_state_dict_is_read(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "pytorch_model.bin"
    torch.save({"model.embed_positions.weights": torch.from_numpy(reference(Spec(8, 4)))}, path)
    assert [s.name for s in open_file(path)] == ["model.embed_positions.weights"]


EVIL = '''
import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with open(sys.argv[1], "wb") as f:
    pickle.dump({"pe": Evil()}, f, protocol=2)
'''


def test_a_pickle_that_would_run_code_is_refused_and_the_code_does_not_run(tmp_path):
    pytest.importorskip("torch")
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    subprocess.run([sys.executable, "-c", EVIL, str(path), str(marker)], check=True)
    with pytest.raises(ValueError, match="evil.pt.*refused: unpickling it would run code"):
        open_file(path)
    assert not marker.exists()


def test_a_header_listing_too_many_tensors_is_refused_at_once(tmp_path):
    """One one-value tensor past the limit: refused after reading the header, before any is
    searched."""
    from harness.identify.checkpoints import MAX_TENSORS

    path = tmp_path / "many.safetensors"
    count = MAX_TENSORS + 1
    header = {"__metadata__": {}}
    header.update({f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
                   for i in range(count)})
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(4 * count))
    with pytest.raises(ValueError, match=f"many.safetensors.*lists {count:,} tensors, more than "
                                         f"the {MAX_TENSORS:,}"):
        open_file(path)
