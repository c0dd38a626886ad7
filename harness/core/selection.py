"""Which implementations a verb works on: `--only` globs, the same way for every verb.

Every verb selects here, rather than in one verb that the others import. What an
implementation is (a correctness reference, say) comes from its registration, never
from its name: a plugin may call itself anything.
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import Iterable, Sequence

from harness.core.registry import Implementation
from harness.util.exitcodes import UsageError


def select(impls: Iterable[Implementation], only: Sequence[str] = (),
           timing: bool = False) -> list[Implementation]:
    """Implementations whose name matches any of the `only` globs; all when there are none,
    except that a sweep (`timing`) leaves out the correctness references (registered with
    `reference=True`: impls/table/library_conventions.py) unless a glob names them."""
    if only:
        return [i for i in impls if matches(i.name, only)]
    return [i for i in impls if not (timing and i.reference)]


def matches(name: str, only: Sequence[str]) -> bool:
    """Whether an implementation called `name` is one the `only` globs select (a run's rows
    are filtered by name, their implementations long gone)."""
    return any(fnmatch.fnmatch(name, g) for g in only)


def chosen(impls: Sequence[Implementation], only: Sequence[str] = (),
           timing: bool = False) -> list[Implementation]:
    """`select`, or a ValueError in the one wording every verb uses when --only matches none."""
    found = select(impls, only, timing)
    if only and not found:
        raise UsageError(unmatched(only, [i.name for i in impls]))
    return found


def unmatched(only: Sequence[str], names: Sequence[str]) -> str:
    """'--only X: no implementation matches; did you mean Y?' (the nearest registered names)."""
    near = [n for g in only for n in difflib.get_close_matches(g, names, n=3, cutoff=0.6)]
    hint = f"; did you mean {', '.join(dict.fromkeys(near))}?" if near else ""
    return (f"--only {' '.join(only)}: no implementation matches{hint} "
            "(`python -m harness list` shows them all)")
