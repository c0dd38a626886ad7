"""Which kind of table a file holds, from its arrays' names and shapes, and the arrays each
kind's search reads.

`cos`/`sin` (also `cos_cached`/`sin_cached`, any prefix) or `inv_freq` -> rotary; `timesteps`
(with `emb`/`embedding`, or --timesteps) -> timestep; `pos_embed`, or one `[1, n, d]` array
whose rows form a grid -> grid; anything else -> the 1-D table search (None here). --kind
forces one; a file that cannot be the forced kind is bad input, said with what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from harness.core import kinds
from harness.identify.files import Stored, open_file
from harness.identify.readers import grid, rotary, timestep
from harness.identify.readers.answer import Answer
from harness.identify.readers.arrays import (COS, EMB, FUNCTION, INV_FREQ, POS_EMBED, SIN, TIMESTEPS,
                                             matrix, read)
from harness.util.exitcodes import UsageError

#: The kind identify's own 1-D search reads (harness/identify/search.py); the readers here read
#: the others. A string comparison on purpose: the 1-D search predates the readers and keeps
#: its richer answer (amplitude, alternatives, libraries).
ONE_D = "table"


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
    return any(p.search(name) for p in (COS, SIN, INV_FREQ, TIMESTEPS, EMB, POS_EMBED))


def identify_family(stored: Sequence[Stored], kind: str = "auto",
                    timesteps: Optional[str] = None) -> Optional[list[tuple[str, Answer]]]:
    """(entry name, answer) for every table of a kind other than the 1-D table; None when the
    file is (or --kind says it is) a 1-D table."""
    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {KINDS}, got {kind!r}")
    if kind == ONE_D:
        return None
    if kind != "auto" and kind not in READERS:
        raise UsageError(f"--kind {kind}: identify has no reader for that kind (it reads "
                         f"{', '.join([ONE_D, *READERS])})")
    names = {s.name: s for s in stored}
    for name, reader in READERS.items():         # in order: the grid reader takes what is left
        if kind in ("auto", name):
            found = reader(stored, names, timesteps, kind == name)
            if found or kind == name:
                return found
    return None


def _rotary(names: dict[str, Stored], forced: bool) -> list[tuple[str, Answer]]:
    out = []
    for name, entry in names.items():
        if COS.search(name):
            out.append((name, _pair(name, entry, names)))
        elif SIN.search(name) and _partner(name, "cos") not in names:
            raise UsageError(f"{entry.source} holds {name!r} but no {_partner(name, 'cos')!r}: a "
                             "rotary cache needs both cos and sin, of the same shape")
        elif INV_FREQ.search(name):
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
    raise UsageError("--kind rotary needs arrays named cos and sin (or cos_cached / sin_cached), "
                     "an inv_freq vector, or one array: a vector, or cos and sin stacked [2, L, D]; "
                     f"found {sorted(names)}")


def _partner(name: str, function: str) -> str:
    """The name of the other half of a cos/sin pair: `a.cos_cached` -> `a.sin_cached`."""
    return FUNCTION.sub(lambda m: m.group(1) + m.group(2) + function + m.group(4), name)


def _pair(name: str, entry: Stored, names: dict[str, Stored]) -> Answer:
    sin_name = _partner(name, "sin")
    if sin_name not in names:
        raise UsageError(f"{entry.source} holds {name!r} but no {sin_name!r}: a rotary cache "
                         "needs both cos and sin, of the same shape")
    cos, dtype = read(entry)
    sin, _ = read(names[sin_name])
    if cos.shape != sin.shape:
        raise UsageError(f"{name!r} has shape {cos.shape} but {sin_name!r} has {sin.shape}: a "
                         f"rotary cache's cos and sin have the same shape ({entry.source})")
    cos = matrix(cos, entry.source, name)
    sin = matrix(sin, names[sin_name].source, sin_name)
    return rotary.from_pair(cos, sin, f"{entry.source} + {sin_name}", dtype)


def _timestep(names: dict[str, Stored], given: Optional[str],
              forced: bool) -> list[tuple[str, Answer]]:
    steps = [s for n, s in names.items() if TIMESTEPS.search(n)]
    if not steps and given is None:
        if forced:
            raise UsageError("--kind timestep needs the timesteps: an array named 'timesteps' in "
                             "the file, or --timesteps FILE_OR_LIST")
        return []
    t = timesteps_from(given) if given is not None else read(steps[0])[0].reshape(-1)
    tables = [s for n, s in names.items() if EMB.search(n)]
    if not tables:
        tables = [s for s in names.values() if s not in steps]
    if len(tables) != 1:
        raise UsageError("a timestep embedding file needs one embedding beside its timesteps "
                         "(named 'emb' or 'embedding' when there are several arrays); found "
                         f"{sorted(names)}")
    entry = tables[0]
    values, dtype = read(entry)
    emb = matrix(values, entry.source, "the embedding")
    return [(entry.name, timestep.from_embedding(emb, t, entry.source, dtype))]


def _grid(stored: Sequence[Stored], names: dict[str, Stored], timesteps: Optional[str],
          forced: bool) -> Optional[list[tuple[str, Answer]]]:
    return grid.search(stored, forced=forced)


#: kind -> its reader (stored, by name, --timesteps, forced) -> answers: tried in this order.
READERS: dict[str, Callable[..., Optional[list[tuple[str, Answer]]]]] = {
    "rotary": lambda stored, names, timesteps, forced: _rotary(names, forced),
    "timestep": lambda stored, names, timesteps, forced: _timestep(names, timesteps, forced),
    "grid": _grid,
}
#: --kind: auto, or any registered kind (one without a reader is refused with its reason).
KINDS = ("auto", *kinds.KINDS)


def timesteps_from(text: str) -> np.ndarray:
    """--timesteps: a file holding one array, or numbers separated by commas."""
    if Path(text).suffix and Path(text).exists():
        stored = open_file(text)
        if len(stored) != 1:
            raise UsageError(f"--timesteps file {text!r} must hold one array, it holds "
                             f"{[s.name for s in stored]}")
        return read(stored[0])[0].reshape(-1)
    try:
        return np.array([float(x) for x in text.split(",") if x.strip()])
    except ValueError:
        raise UsageError(f"--timesteps must be a file of timesteps or numbers separated by "
                         f"commas (0,250,500), got {text!r}") from None
