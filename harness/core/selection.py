"""Which implementations a verb works on: `--only` globs, the same way for every verb.

Every verb selects here, rather than in one verb that the others import. What an
implementation is (a correctness reference, say) comes from its registration, never
from its name: a plugin may call itself anything.
"""

from __future__ import annotations

import fnmatch
from typing import Iterable, Sequence

from harness.core.registry import Implementation


def select(impls: Iterable[Implementation], only: Sequence[str] = (),
           timing: bool = False) -> list[Implementation]:
    """Implementations whose name matches any of the `only` globs; all when there are none,
    except that a sweep (`timing`) leaves out the correctness references (registered with
    `reference=True`: impls/table/library_conventions.py) unless a glob names them."""
    if only:
        return [i for i in impls if any(fnmatch.fnmatch(i.name, g) for g in only)]
    return [i for i in impls if not (timing and i.reference)]
