"""Which kind of table a file holds, from its arrays' names and shapes, and which kind's reader
reads it.

Each kind names its reader (`Kind.reader`: harness/identify/readers/<kind>.py), and each reader
the array names it takes (`CLAIMS`): `cos`/`sin` (also `cos_cached`/`sin_cached`, any prefix) or
`inv_freq` -> rotary; `timesteps` (with `emb`/`embedding`, or --timesteps) -> timestep;
`pos_embed`, or one `[1, n, d]` array whose rows form a grid -> grid (tried last: `LAST`);
anything else -> the 1-D table search (None here). --kind forces one; a file that cannot be the
forced kind is bad input, said with what is missing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Optional, Sequence

from harness.core import kinds
from harness.identify.files import Stored
from harness.identify.readers.answer import Answer
from harness.identify.readers.timestep import timesteps_from  # noqa: F401 (its old place)
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
    return Route(read_kinds(stored, kind, timesteps))


def _claimed(name: str) -> bool:
    return any(p.search(name) for reader in READERS.values() for p in reader.CLAIMS)


def read_kinds(stored: Sequence[Stored], kind: str = "auto",
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
    for name, reader in READERS.items():         # in order: the last reader takes what is left
        if kind in ("auto", name):
            found = reader.read(stored, names, timesteps, kind == name)
            if found or kind == name:
                return found
    return None


#: the name the previous release had (kinds other than the 1-D table were "the family")
identify_family = read_kinds


def _readers() -> dict[str, ModuleType]:
    """kind -> its reader module (`Kind.reader`), in the kinds' order, a `LAST` one at the end."""
    named = [(k.name, importlib.import_module(k.reader)) for k in sorted(kinds.KINDS.values(),
                                                                          key=lambda k: k.order)
             if k.reader]
    return dict(sorted(named, key=lambda item: getattr(item[1], "LAST", False)))


#: kind -> its reader module (`read(stored, by name, --timesteps, forced) -> answers`, `CLAIMS`):
#: tried in this order.
READERS: dict[str, ModuleType] = _readers()
#: --kind: auto, or any registered kind (one without a reader is refused with its reason).
KINDS = ("auto", *kinds.KINDS)
