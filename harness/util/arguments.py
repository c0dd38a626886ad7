"""Checks of command-line values shared by the verbs: a UsageError naming the option and its range.

The CLI turns a UsageError into one line and exit code 2, before anything runs,
instead of a traceback from wherever the bad value would first have been used.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from harness.util.exitcodes import UsageError


def at_least(value: int, option: str, low: int) -> int:
    if value < low:
        raise UsageError(f"{option} must be an integer >= {low}, got {value}")
    return value


def positive_seconds(value: float, option: str) -> float:
    if not value > 0 or math.isinf(value):
        raise UsageError(f"{option} must be a finite number of seconds > 0, got {value}")
    return value


def writable_dir(text: str, option: str = "--out") -> Path:
    """A directory that is there or can be made, and can be written to; nothing is created."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {text}: exists and is not a directory")
    existing = next(p for p in (path, *path.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise UsageError(f"{option} {text}: {existing} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot write in {existing} "
                         f"({exc.strerror or exc})") from None
    return path


def names(text: str, option: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """'a,b' -> ('a', 'b'), each one of `allowed`; () for an empty text."""
    chosen = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    wrong = [n for n in chosen if n not in allowed]
    if wrong:
        raise UsageError(f"{option} takes a comma-separated list of {','.join(allowed)}; "
                         f"got {wrong[0]!r}")
    return chosen
