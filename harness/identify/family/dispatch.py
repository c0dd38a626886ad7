"""Which kind of table a file holds, from its arrays' names and shapes, and the arrays each
kind's search reads.

`cos`/`sin` (also `cos_cached`/`sin_cached`, any prefix) or `inv_freq` -> rotary; `timesteps`
(with `emb`/`embedding`, or --timesteps) -> timestep; `pos_embed`, or one `[1, n, d]` array
whose rows form a grid -> grid; anything else -> the 1-D table search (None here). --kind
forces one; a file that cannot be the forced kind is bad input, said with what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from harness.identify.family import rotary, timestep
from harness.identify.family.answer import Answer
from harness.identify.files import Stored, open_file

KINDS = ("auto", "table", "rotary", "grid", "timestep")
_COS = re.compile(r"(^|[._/])_?cos(_cached|_cache)?$")
_SIN = re.compile(r"(^|[._/])_?sin(_cached|_cache)?$")
_FUNCTION = re.compile(r"(^|[._/])(_?)(cos|sin)((_cached|_cache)?)$")
_INV_FREQ = re.compile(r"(^|[._/])inv_freq$")
_TIMESTEPS = re.compile(r"(^|[._/])(timesteps?)$")
_EMB = re.compile(r"(^|[._/])(emb|embedding|embeddings|temb)$")
_POS_EMBED = re.compile(r"(^|[._/])pos_embed(ding)?s?$")


@dataclass(frozen=True)
class Route:
    """Where a file goes: `answers` of other kinds, or (None) the 1-D table search, with that
    search's results when deciding needed them."""

    answers: Optional[list[tuple[str, Answer]]] = None
    scanned: Optional[list] = None


def route(stored: Sequence[Stored], kind: str = "auto", timesteps: Optional[str] = None,
          scan: Optional[Callable[[Sequence[Stored]], list]] = None) -> Route:
    """A file whose arrays are named for another kind goes to that kind, unless (--kind auto)
    one of its other arrays is a 1-D table: then the 1-D search reports every entry, as it
    always has (`scan` gives its results, kept so the work is not done twice)."""
    claimed = [s for s in stored if _claimed(s.name)]
    if kind == "auto" and scan is not None and claimed and len(claimed) < len(stored):
        scanned = scan(stored)
        if any(getattr(r, "matched", False) for s, r in scanned if s not in claimed):
            return Route(None, scanned)
    return Route(identify_family(stored, kind, timesteps))


def _claimed(name: str) -> bool:
    return any(p.search(name) for p in (_COS, _SIN, _INV_FREQ, _TIMESTEPS, _EMB, _POS_EMBED))


def identify_family(stored: Sequence[Stored], kind: str = "auto",
                    timesteps: Optional[str] = None) -> Optional[list[tuple[str, Answer]]]:
    """(entry name, answer) for every table of a kind other than the 1-D table; None when the
    file is (or --kind says it is) a 1-D table."""
    if kind not in KINDS:
        raise ValueError(f"--kind must be one of {KINDS}, got {kind!r}")
    if kind == "table":
        return None
    names = {s.name: s for s in stored}
    if kind in ("auto", "rotary"):
        found = _rotary(names, forced=kind == "rotary")
        if found or kind == "rotary":
            return found
    if kind in ("auto", "timestep"):
        found = _timestep(names, timesteps, forced=kind == "timestep")
        if found or kind == "timestep":
            return found
    from harness.identify.family import grid  # the grid kind may not be registered yet

    return grid.search(stored, forced=kind == "grid")


def read(entry: Stored, raw: Any = None) -> tuple[np.ndarray, str]:
    """The entry's values (`raw`: as already read) in float64 and its stored dtype."""
    from harness.core.convert import dtype_name, to_numpy

    raw = entry.read() if raw is None else raw
    dtype = entry.dtype or dtype_name(raw)
    values = np.asarray(to_numpy(raw), dtype=np.float64)
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        dtype = "float64" if dtype in ("", "float64") or values.dtype == np.float64 else "float32"
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{entry.source} has NaN/Inf values: identify needs finite values")
    return values, dtype


def matrix(values: np.ndarray, source: str, what: str) -> np.ndarray:
    """Leading unit axes dropped (`[1, 1, L, D]` -> `[L, D]`); must end 2-D."""
    while values.ndim > 2 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise ValueError(f"{what} must be [length, width] (with any leading axes of size 1), got "
                         f"shape {values.shape} ({source})")
    return values


def _rotary(names: dict[str, Stored], forced: bool) -> list[tuple[str, Answer]]:
    out = []
    for name, entry in names.items():
        if _COS.search(name):
            out.append((name, _pair(name, entry, names)))
        elif _SIN.search(name) and _partner(name, "cos") not in names:
            raise ValueError(f"{entry.source} holds {name!r} but no {_partner(name, 'cos')!r}: a "
                             "rotary cache needs both cos and sin, of the same shape")
        elif _INV_FREQ.search(name):
            values, dtype = read(entry)
            out.append((name, rotary.from_inv_freq(values, entry.source, dtype)))
    if out or not forced:
        return out
    if len(names) == 1:                               # one array: a vector, or cos and sin stacked
        entry = next(iter(names.values()))
        values, dtype = read(entry)
        while values.ndim > 1 and values.shape[0] == 1:
            values = values[0]
        if values.ndim == 1:
            return [(entry.name, rotary.from_inv_freq(values, entry.source, dtype))]
        if values.ndim == 3 and values.shape[0] == 2:
            return [(entry.name, rotary.from_pair(values[0], values[1], entry.source, dtype))]
    raise ValueError("--kind rotary needs arrays named cos and sin (or cos_cached / sin_cached), "
                     "an inv_freq vector, or one array: a vector, or cos and sin stacked [2, L, D]; "
                     f"found {sorted(names)}")


def _partner(name: str, function: str) -> str:
    """The name of the other half of a cos/sin pair: `a.cos_cached` -> `a.sin_cached`."""
    return _FUNCTION.sub(lambda m: m.group(1) + m.group(2) + function + m.group(4), name)


def _pair(name: str, entry: Stored, names: dict[str, Stored]) -> Answer:
    sin_name = _partner(name, "sin")
    if sin_name not in names:
        raise ValueError(f"{entry.source} holds {name!r} but no {sin_name!r}: a rotary cache "
                         "needs both cos and sin, of the same shape")
    cos, dtype = read(entry)
    sin, _ = read(names[sin_name])
    if cos.shape != sin.shape:
        raise ValueError(f"{name!r} has shape {cos.shape} but {sin_name!r} has {sin.shape}: a "
                         f"rotary cache's cos and sin have the same shape ({entry.source})")
    cos = matrix(cos, entry.source, name)
    sin = matrix(sin, names[sin_name].source, sin_name)
    return rotary.from_pair(cos, sin, f"{entry.source} + {sin_name}", dtype)


def _timestep(names: dict[str, Stored], given: Optional[str],
              forced: bool) -> list[tuple[str, Answer]]:
    steps = [s for n, s in names.items() if _TIMESTEPS.search(n)]
    if not steps and given is None:
        if forced:
            raise ValueError("--kind timestep needs the timesteps: an array named 'timesteps' in "
                             "the file, or --timesteps FILE_OR_LIST")
        return []
    t = timesteps_from(given) if given is not None else read(steps[0])[0].reshape(-1)
    tables = [s for n, s in names.items() if _EMB.search(n)]
    if not tables:
        tables = [s for s in names.values() if s not in steps]
    if len(tables) != 1:
        raise ValueError("a timestep embedding file needs one embedding beside its timesteps "
                         "(named 'emb' or 'embedding' when there are several arrays); found "
                         f"{sorted(names)}")
    entry = tables[0]
    values, dtype = read(entry)
    emb = matrix(values, entry.source, "the embedding")
    return [(entry.name, timestep.from_embedding(emb, t, entry.source, dtype))]


def timesteps_from(text: str) -> np.ndarray:
    """--timesteps: a file holding one array, or numbers separated by commas."""
    if Path(text).suffix and Path(text).exists():
        stored = open_file(text)
        if len(stored) != 1:
            raise ValueError(f"--timesteps file {text!r} must hold one array, it holds "
                             f"{[s.name for s in stored]}")
        return read(stored[0])[0].reshape(-1)
    try:
        return np.array([float(x) for x in text.split(",") if x.strip()])
    except ValueError:
        raise ValueError(f"--timesteps must be a file of timesteps or numbers separated by "
                         f"commas (0,250,500), got {text!r}") from None
