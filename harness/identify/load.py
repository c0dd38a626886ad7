"""Read a saved table (.npy, .npz, .pt, .csv) into one float64 `[length, d_model]` array.

Tables are saved in many shapes: with a leading batch axis of identical
copies (`pe[None]`, a broadcast `x`-shaped tensor), as one entry of an
archive or state dict, as text. This module brings them all to one array and
keeps the stored dtype, which sets the tolerance of the match. Anything that
cannot be a table (NaN/Inf, a vector, a batch of different tables) is a
ValueError that says why and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

SUFFIXES = (".npy", ".npz", ".pt", ".pth", ".csv")
STORED_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class LoadedTable:
    """A table ready to identify, and how it was found."""

    values: np.ndarray          # float64 [length, d_model]
    dtype: str                  # stored dtype; "" when the file has none (CSV)
    source: str
    batch: int = 1              # identical copies dropped from a leading batch axis

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]


def load(path: str | Path, key: Optional[str] = None) -> LoadedTable:
    """Read `path`; `key` picks an entry of an .npz archive or a .pt dict."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"FILE {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"FILE must end in one of {', '.join(SUFFIXES)}, got {path.name!r}")
    if suffix == ".csv":
        return from_array(_read_csv(path), source=str(path), dtype="")
    if suffix == ".npy":
        raw, where = _reading(path, lambda: np.load(path, allow_pickle=False)), str(path)
    elif suffix == ".npz":
        raw, where = _pick_npz(path, key)
    else:
        raw, where = _pick_torch(path, key)
    return from_array(raw, source=where)


def from_array(raw: Any, source: str = "array", dtype: Optional[str] = None) -> LoadedTable:
    """Validate and flatten an array-like (NumPy or torch) into a LoadedTable."""
    from harness.convert import dtype_name, to_numpy

    stored = dtype if dtype is not None else dtype_name(raw)
    arr = to_numpy(raw)
    if stored and stored not in STORED_DTYPES:
        raise ValueError(f"table dtype must be one of {STORED_DTYPES}, got {stored} ({source})")
    if arr.ndim < 2:
        raise ValueError(f"a table must be [length, d_model] (or [batch, length, d_model]), "
                         f"got shape {arr.shape} ({source})")
    values = arr.astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        where = np.argwhere(bad)[0]
        raise ValueError(f"table has {int(bad.sum())} NaN/Inf values (first at position "
                         f"{where[-2]}, column {where[-1]}): identify needs a finite table "
                         f"({source})")
    values, batch = _drop_batch(values, source)
    if values.shape[1] < 2 or values.shape[0] < 1:
        raise ValueError(f"a table needs length >= 1 and d_model >= 2, got shape {values.shape} "
                         f"({source})")
    return LoadedTable(np.ascontiguousarray(values), stored, source, batch)


def _drop_batch(values: np.ndarray, source: str) -> tuple[np.ndarray, int]:
    """[..., length, d_model] with identical copies -> [length, d_model]."""
    if values.ndim == 2:
        return values, 1
    copies = values.reshape(-1, *values.shape[-2:])
    spread = float(np.max(np.abs(copies - copies[:1]))) if len(copies) > 1 else 0.0
    if spread > 0.0:
        raise ValueError(f"shape {values.shape}: the leading axes hold {len(copies)} different "
                         f"tables (max difference {spread:.3g}); identify expects one table, "
                         f"or identical copies along a batch axis ({source})")
    return copies[0], len(copies)


def _reading(path: Path, read: Callable[[], Any]) -> Any:
    """Run a file reader; a corrupt file is one line naming it, not the reader's own message."""
    try:
        return read()
    except Exception as exc:
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else type(exc).__name__
        raise ValueError(f"FILE {path.name!r} is not a readable {path.suffix} table: "
                         f"{first_line}") from None


def _pick_npz(path: Path, key: Optional[str]) -> tuple[np.ndarray, str]:
    with _reading(path, lambda: np.load(path, allow_pickle=False)) as archive:
        names = list(archive.files)
        if not names:
            raise ValueError(f"{path.name} holds no arrays")
        name = key if key is not None else names[0]
        if name not in names:
            raise ValueError(f"--key must be one of {names} for {path.name}, got {key!r}")
        return archive[name], f"{path}[{name}]"


def _pick_torch(path: Path, key: Optional[str]) -> tuple[Any, str]:
    try:
        import torch
    except ImportError:
        raise ValueError(f"reading {path.name} needs torch "
                         "(pip install 'pe-harness[torch]')") from None
    obj = _reading(path, lambda: torch.load(path, map_location="cpu", weights_only=True))
    if isinstance(obj, torch.Tensor):
        return obj, str(path)
    if isinstance(obj, (list, tuple)):
        obj = dict(enumerate(obj))
    entries = dict(obj) if isinstance(obj, dict) else {}
    tensors = {str(k): v for k, v in entries.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise ValueError(f"{path.name} holds no tensor (found {type(obj).__name__})")
    name = key if key is not None else next(iter(tensors))
    if name not in tensors:
        raise ValueError(f"--key must be one of {list(tensors)} for {path.name}, got {key!r}")
    return tensors[name], f"{path}[{name}]"


def _read_csv(path: Path) -> np.ndarray:
    """Numbers only; a header row and a pandas index column (0, 1, 2, ...) are dropped."""
    import pandas as pd

    frame = _reading(path, lambda: pd.read_csv(path, header=None))
    if frame.shape[0] and pd.to_numeric(frame.iloc[0], errors="coerce").isna().any():
        frame = _reading(path, lambda: pd.read_csv(path, header=0))
    try:
        values = frame.apply(pd.to_numeric).to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path.name}: every cell must be a number ({exc})") from None
    first = values[:, 0] if values.size else values
    # A sinusoid never leaves [-1, 1]: a first column 0, 1, 2, ... is an index, not data.
    if values.shape[1] > 2 and len(first) > 2 and np.array_equal(first, np.arange(len(first))):
        values = values[:, 1:]
    return values
