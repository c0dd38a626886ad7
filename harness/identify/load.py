"""Bring one stored array (NumPy or torch) to a `[length, d_model]` table ready to identify.

Tables are saved in many shapes: with a leading batch axis of identical copies (`pe[None]`,
a broadcast `x`-shaped tensor), with a singleton axis in the middle (the PyTorch tutorial's
`[max_len, 1, d_model]` buffer), as one entry of an archive or state dict, as text. This
module brings them all to one array and keeps the stored dtype, which sets the tolerance of
the match. The values stay as stored (float16/32/64; bfloat16 widened exactly to float32) and
are scanned in chunks of rows: a big table is never copied to float64 as a whole. Anything
that cannot be a table (NaN/Inf, a vector, a batch of different tables) is a ValueError that
says why and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from harness.identify.files import open_file
from harness.util.exitcodes import UsageError

STORED_DTYPES = ("float16", "bfloat16", "float32", "float64")
KEPT_DTYPES = (np.float16, np.float32, np.float64)
#: Elements per chunk of a pass over a table: a few MiB of temporaries whatever its size.
CHUNK_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class LoadedTable:
    """A table ready to identify, and how it was found."""

    values: np.ndarray          # [length, d_model], float16/32/64 as stored (may be a memmap)
    dtype: str                  # stored dtype; "" when the file has none (CSV)
    source: str
    batch: int = 1              # identical copies dropped from a leading batch axis
    peaks: Optional[np.ndarray] = None   # max |value| of every row (float64); None: not scanned

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]


def load(path: str | Path, key: Optional[str] = None) -> LoadedTable:
    """The table in `path`: `key`'s entry, or the first entry that is a table."""
    problems = []
    for stored in open_file(path, key):
        try:
            return from_array(stored.read(), source=stored.source, dtype=stored.dtype)
        except ValueError as exc:
            problems.append(str(exc))
    raise UsageError(problems[0] if len(problems) == 1 else
                     f"{Path(path).name} holds no table: " + "; ".join(problems))


def from_array(raw: Any, source: str = "array", dtype: Optional[str] = None) -> LoadedTable:
    """Validate and flatten an array-like (NumPy or torch) into a LoadedTable."""
    from harness.core.convert import dtype_name, to_numpy

    stored = dtype if dtype is not None else dtype_name(raw)
    arr = to_numpy(raw)
    if stored and stored not in STORED_DTYPES:
        raise UsageError(f"table dtype must be one of {STORED_DTYPES}, got {stored} ({source})")
    if arr.ndim < 2:
        raise UsageError(f"a table must be [length, d_model] (or [batch, length, d_model]), "
                         f"got shape {arr.shape} ({source})")
    if arr.dtype not in KEPT_DTYPES:
        arr = arr.astype(np.float64)
    values, batch = _drop_batch(_squeeze(arr), source)
    if values.shape[1] < 2 or values.shape[0] < 1:
        raise UsageError(f"a table needs length >= 1 and d_model >= 2, got shape {values.shape} "
                         f"({source})")
    peaks = row_peaks(values)
    bad_rows = np.flatnonzero(~np.isfinite(peaks))
    if len(bad_rows):
        bad = ~np.isfinite(values[bad_rows])
        row, col = bad_rows[np.argwhere(bad)[0][0]], np.argwhere(bad)[0][1]
        raise UsageError(f"table has {int(bad.sum())} NaN/Inf values (first at position "
                         f"{row}, column {col}): identify needs a finite table ({source})")
    return LoadedTable(values, stored, source, batch, peaks)


def row_peaks(values: np.ndarray) -> np.ndarray:
    """max |value| of every row, in chunks (NaN or Inf where the row has one)."""
    length, width = values.shape
    out = np.empty(length)
    step = max(1, CHUNK_ELEMENTS // width)
    for start in range(0, length, step):
        out[start:start + step] = np.abs(values[start:start + step]).max(axis=1)
    return out


def _squeeze(arr: np.ndarray) -> np.ndarray:
    """Drop singleton axes while there are more than two: `[max_len, 1, d]` is one table."""
    while arr.ndim > 2 and 1 in arr.shape:
        arr = arr.squeeze(axis=arr.shape.index(1))
    return arr


def _drop_batch(values: np.ndarray, source: str) -> tuple[np.ndarray, int]:
    """[..., length, d_model] with identical copies -> [length, d_model]."""
    if values.ndim == 2:
        return values, 1
    copies = values.reshape(-1, *values.shape[-2:])
    spread = max((float(np.max(np.abs(c - copies[0]))) for c in copies[1:]), default=0.0)
    if not math.isfinite(spread):
        raise UsageError(f"table has NaN/Inf values: identify needs a finite table ({source})")
    if spread > 0.0:
        raise UsageError(f"shape {values.shape}: the leading axes hold {len(copies)} different "
                         f"tables (max difference {spread:.3g}); identify expects one table, "
                         f"or identical copies along a batch axis ({source})")
    return copies[0], len(copies)
