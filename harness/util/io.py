"""Atomic writes: a reader (or a Ctrl-C) never sees half a file.

Each file is written to a temporary name beside it, fsynced and renamed over
the target. The temporary file is created with mode 0666 less the umask, as
`open()` would create the target itself (tempfile.mkstemp's private 0600
would otherwise become the mode of every report and CSV).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pandas as pd

#: Mode of a new file before the umask: what open(path, "w") uses.
FILE_MODE = 0o666


def write_text(path: Path, text: str, durable: bool = True) -> Path:
    """`durable=False`: atomic but not fsynced, for a file that matters only while its writer
    lives (a worker's heartbeat, three a cell: their fsyncs were 2% of a sweep's worker time)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    return write_text(path, frame.to_csv(index=False))


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, uniquely named file next to `path` (same file system, so the rename is atomic)."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), tmp
        except FileExistsError:   # another writer drew the same name: draw again
            continue
