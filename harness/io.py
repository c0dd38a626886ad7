"""Atomic writes: a reader (or a Ctrl-C) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    return write_text(path, frame.to_csv(index=False))
