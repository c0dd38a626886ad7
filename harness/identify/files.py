"""The arrays a file holds (.npy, .npz, .csv, and checkpoints: .pt/.pth/.bin, .safetensors,
.h5/.weights.h5), each by name, read without running code.

People save tables as they have them: one array, an archive of several, a state dict or a
checkpoint with nested dicts next to 1-D buffers and weights. Every array is listed, so the
caller can identify each one instead of silently taking the first. Nothing is executed:
.npy/.npz with allow_pickle=False, .pt with torch.load(weights_only=True), safetensors and
HDF5 parsed as data (harness.identify.checkpoints).

Memory: a .npy file is memory-mapped (its pages are read as they are used and need not fit in
memory); anything read whole (an .npz member, a .pt file, a CSV) is measured against the
memory available first, so a file too big for this machine is one clear error, not swapping.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from harness.identify import checkpoints
from harness.util import memory
from harness.util.exitcodes import UsageError

SUFFIXES = (".npy", ".npz", ".pt", ".pth", ".bin", ".safetensors", ".h5", ".csv")
TORCH_SUFFIXES = (".pt", ".pth", ".bin")
#: What identify needs besides the table itself: chunks, row samples, the column plans.
WORKSPACE = 32 << 20
#: Bytes of memory a CSV needs per byte of text, at most (float64 values plus the parser's own).
CSV_EXPANSION = 2


@dataclass(frozen=True)
class Stored:
    """One array of a file: its name ("" for a file that is one array) and how to read it."""

    name: str
    source: str                 # file name with the key, for messages: "pe.pt[pe]"
    read: Callable[[], Any]     # returns a NumPy array or a torch tensor
    dtype: Optional[str] = None  # the stored dtype when the array cannot tell ("" for a CSV)


def open_file(path: str | Path, key: Optional[str] = None) -> tuple[Stored, ...]:
    """The arrays in `path` (only `key`'s when given), in the file's order; never empty."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"FILE {str(path)!r} is a directory, not a table file")
    if not path.exists():
        raise UsageError(f"FILE {str(path)!r} does not exist")
    if not path.is_file():
        raise UsageError(f"FILE {str(path)!r} is not a regular file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(f"FILE must end in one of {', '.join(SUFFIXES)}, got {path.name!r}")
    if suffix in (".npy", ".csv"):
        if key is not None:
            raise UsageError(f"--key applies to archives and checkpoints; {path.name} holds one "
                             "array")
        if suffix == ".csv":
            return (Stored("", str(path), lambda: _csv(path), dtype=""),)
        return (Stored("", str(path), lambda: _npy(path)),)
    stored = (_npz(path) if suffix == ".npz" else _torch(path) if suffix in TORCH_SUFFIXES
              else _safetensors(path) if suffix == ".safetensors" else _hdf5(path))
    if key is None:
        return stored
    names = [s.name for s in stored]
    if key not in names:
        raise UsageError(f"--key must be one of {names} for {path.name}, got {key!r}")
    return tuple(s for s in stored if s.name == key)


def reading(path: Path, read: Callable[[], Any]) -> Any:
    """Run a file reader; a corrupt file is one line naming it, not the reader's own message."""
    try:
        return read()
    except MemoryError:
        raise UsageError(f"FILE {path.name!r}: out of memory while reading it") from None
    except Exception as exc:
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else type(exc).__name__
        raise UsageError(f"FILE {path.name!r} is not a readable {path.suffix} table: "
                         f"{first_line}") from None


def check_memory(path: Path, nbytes: int, what: str) -> None:
    """Refuse, naming the file, when `nbytes` plus identify's workspace exceed available memory."""
    need, available = nbytes + WORKSPACE, memory.available_bytes()
    if need > available:
        raise UsageError(f"FILE {path.name!r}: {what} needs about {memory.human_bytes(need)} of "
                         f"memory to identify, but only {memory.human_bytes(available)} is "
                         "available")


def _npy(path: Path) -> np.ndarray:
    return reading(path, lambda: np.load(path, mmap_mode="r", allow_pickle=False))


def _npz(path: Path) -> tuple[Stored, ...]:
    """Members are read one at a time, each after checking that it fits."""
    with reading(path, lambda: np.load(path, allow_pickle=False)) as archive:
        sizes = {info.filename: info.file_size for info in archive.zip.infolist()}
        names = list(archive.files)
    if not names:
        raise UsageError(f"{path.name} holds no arrays")

    def read(name: str) -> np.ndarray:
        check_memory(path, sizes.get(f"{name}.npy", 0), f"array {name!r}")
        with reading(path, lambda: np.load(path, allow_pickle=False)) as archive:
            return reading(path, lambda: archive[name])

    return tuple(Stored(n, f"{path}[{n}]", lambda n=n: read(n)) for n in names)


def _torch(path: Path) -> tuple[Stored, ...]:
    """Every tensor of a .pt file: a bare tensor, or the tensors of (nested) dicts and lists,
    named by their key path ("model.pe")."""
    try:
        import torch
    except ImportError:
        raise UsageError(f"reading {path.name} needs torch "
                         "(pip install 'pe-harness[torch]')") from None
    check_memory(path, path.stat().st_size, "the file")

    def load() -> Any:
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            raise RuntimeError(checkpoints.REFUSED_PICKLE) from None

    obj = reading(path, load)
    if isinstance(obj, torch.Tensor):
        return (Stored("", str(path), lambda: obj),)
    found: list[Stored] = []
    _tensors(obj, "", found, torch.Tensor, str(path))
    if not found:
        raise UsageError(f"{path.name} holds no tensor (found {type(obj).__name__})")
    return tuple(found)


def _safetensors(path: Path) -> tuple[Stored, ...]:
    arrays = reading(path, lambda: checkpoints.safetensors_arrays(path))
    if not arrays:
        raise UsageError(f"{path.name} holds no tensors")
    # BF16 is widened to float32 to be read; its precision is the stored dtype's
    return tuple(Stored(n, f"{path}[{n}]", lambda a=a: a, dtype=d) for n, (a, d) in arrays.items())


def _hdf5(path: Path) -> tuple[Stored, ...]:
    check_memory(path, path.stat().st_size, "the file")
    readers = reading(path, lambda: checkpoints.hdf5_arrays(path))
    if not readers:
        raise UsageError(f"{path.name} holds no numeric datasets")
    return tuple(Stored(n, f"{path}[{n}]", read) for n, read in readers.items())


def _tensors(obj: Any, prefix: str, out: list[Stored], tensor: type, where: str) -> None:
    items = (obj.items() if isinstance(obj, dict) else
             enumerate(obj) if isinstance(obj, (list, tuple)) else ())
    for k, v in items:
        name = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, tensor):
            out.append(Stored(name, f"{where}[{name}]", lambda v=v: v))
        else:
            _tensors(v, name, out, tensor, where)


def _csv(path: Path) -> np.ndarray:
    """Numbers only; a header row and a pandas index column (0, 1, 2, ...) are dropped."""
    import pandas as pd

    check_memory(path, CSV_EXPANSION * path.stat().st_size, "the CSV")
    frame = reading(path, lambda: pd.read_csv(path, header=None))
    if frame.shape[0] and pd.to_numeric(frame.iloc[0], errors="coerce").isna().any():
        frame = reading(path, lambda: pd.read_csv(path, header=0))
    try:
        values = frame.apply(pd.to_numeric).to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path.name}: every cell must be a number ({exc})") from None
    first = values[:, 0] if values.size else values
    # A sinusoid never leaves [-1, 1]: a first column 0, 1, 2, ... is an index, not data.
    if values.shape[1] > 2 and len(first) > 2 and np.array_equal(first, np.arange(len(first))):
        values = values[:, 1:]
    return values

