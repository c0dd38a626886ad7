"""Checkpoint formats read without running any code: safetensors, Keras .weights.h5, torch.

- `.safetensors`: an 8-byte little-endian header length, a JSON header (name -> dtype,
  shape, byte offsets), then raw little-endian data. Parsed here with the standard library
  and NumPy, so neither the safetensors package nor a pickle is involved; BF16 is widened to
  float32 exactly.
- Keras `.weights.h5` (and any HDF5 file): every numeric dataset, named by its path
  (`layers/embedding/vars/0`), read with h5py; object or string datasets are refused.
- torch `.pt`/`.pth`/`.bin`: `torch.load(weights_only=True)`. A file that needs code to be
  unpickled (a custom class, `os.system` in a `__reduce__`) is refused by torch's restricted
  unpickler before anything runs; the message says so.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Optional

import numpy as np

from harness.util.exitcodes import UsageError

#: safetensors dtype names -> NumPy dtypes (BF16 handled apart: NumPy has none)
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                      "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
MAX_HEADER = 100 << 20
#: Tensors one file may list: the largest models' shards list a few thousand; a header listing
#: hundreds of thousands would take identify an hour to search.
MAX_TENSORS = 50_000
REFUSED_PICKLE = ("refused: unpickling it would run code (it holds objects other than tensors, "
                  "so torch.load(weights_only=True) will not load it; nothing was executed)")


def safetensors_arrays(path: Path) -> dict[str, tuple[np.ndarray, Optional[str]]]:
    """name -> array (memory-mapped, read lazily), in the header's order; metadata skipped."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise UsageError("shorter than a safetensors header (8 bytes)")
        (length,) = struct.unpack("<Q", head)
        if length > min(MAX_HEADER, size - 8):
            raise UsageError(f"header length {length} does not fit a {size}-byte file")
        try:
            header = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise UsageError("header is not a JSON object")
    if len(header) > MAX_TENSORS + 1:        # + its __metadata__
        raise UsageError(f"header lists {len(header) - 1:,} tensors, more than the {MAX_TENSORS:,} "
                         "a checkpoint file is read with (each would be searched)")
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length) if size > 8 + length \
        else np.zeros(0, np.uint8)
    arrays = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        widened = isinstance(entry, dict) and entry.get("dtype") == "BF16"
        arrays[name] = (_tensor(name, entry, data), "bfloat16" if widened else None)
    return arrays


def _tensor(name: str, entry: Any, data: np.ndarray) -> np.ndarray:
    try:
        dtype, shape, (start, stop) = entry["dtype"], tuple(entry["shape"]), entry["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"tensor {name!r}: header entry lacks dtype/shape/data_offsets") from None
    if not 0 <= start <= stop <= data.size:
        raise UsageError(f"tensor {name!r}: bytes {start}..{stop} lie outside the file's data "
                         f"({data.size} bytes): truncated?")
    raw = data[start:stop]
    count = int(np.prod(shape)) if shape else 1
    if dtype == "BF16":
        if raw.size != 2 * count:
            raise UsageError(f"tensor {name!r}: {raw.size} bytes for {count} bfloat16 values")
        bits = raw.view("<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    if dtype not in SAFETENSORS_DTYPES:
        raise UsageError(f"tensor {name!r}: dtype {dtype} is not supported")
    numpy_dtype = np.dtype(SAFETENSORS_DTYPES[dtype])
    if raw.size != numpy_dtype.itemsize * count:
        raise UsageError(f"tensor {name!r}: {raw.size} bytes for {count} {dtype} values")
    return raw.view(numpy_dtype).reshape(shape)


def hdf5_arrays(path: Path) -> dict[str, Any]:
    """dataset path -> a reader of its numeric data, for every dataset of an HDF5 file."""
    try:
        import h5py
    except ImportError:
        raise UsageError("reading .h5 files needs h5py (installed with keras/tensorflow)") from None
    found: dict[str, Any] = {}
    with h5py.File(path, "r") as f:
        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                if obj.dtype.kind not in "fiub":
                    return                # strings and objects: nothing sinusoidal, never read
                found[name] = (obj.shape, str(obj.dtype))

        f.visititems(visit)

    def reader(name: str):
        def read() -> np.ndarray:
            with h5py.File(path, "r") as f:
                return np.asarray(f[name][()])
        return read

    return {name: reader(name) for name in found}
