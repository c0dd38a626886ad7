"""An entry's values as every kind's reader takes them, and the names that claim an entry for a
kind (registers nothing; the readers and dispatch import it, never each other)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from harness.identify.files import Stored
from harness.util.exitcodes import UsageError

COS = re.compile(r"(^|[._/])_?cos(_cached|_cache)?$")
SIN = re.compile(r"(^|[._/])_?sin(_cached|_cache)?$")
FUNCTION = re.compile(r"(^|[._/])(_?)(cos|sin)((_cached|_cache)?)$")
INV_FREQ = re.compile(r"(^|[._/])inv_freq$")
TIMESTEPS = re.compile(r"(^|[._/])(timesteps?)$")
EMB = re.compile(r"(^|[._/])(emb|embedding|embeddings|temb)$")
POS_EMBED = re.compile(r"(^|[._/])pos_embed(ding)?s?$")


def read(entry: Stored, raw: Any = None) -> tuple[np.ndarray, str]:
    """The entry's values (`raw`: as already read) in float64 and its stored dtype."""
    from harness.core.convert import dtype_name, to_numpy

    raw = entry.read() if raw is None else raw
    dtype = entry.dtype or dtype_name(raw)
    values = np.asarray(to_numpy(raw), dtype=np.float64)
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        dtype = "float64" if dtype in ("", "float64") or values.dtype == np.float64 else "float32"
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{entry.source} has NaN/Inf values: identify needs finite values")
    return values, dtype


def matrix(values: np.ndarray, source: str, what: str) -> np.ndarray:
    """Leading unit axes dropped (`[1, 1, L, D]` -> `[L, D]`); must end 2-D."""
    while values.ndim > 2 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise UsageError(f"{what} must be [length, width] (with any leading axes of size 1), got "
                         f"shape {values.shape} ({source})")
    return values
