"""Which implementations a verb works on: `--only` globs, and how library conventions are named.

Every verb selects the same way, so the rule lives here rather than in one verb that the
others import.
"""

from __future__ import annotations

import fnmatch
from typing import Iterable, Sequence

from harness.core.registry import Implementation

#: Implementations that re-derive a library's convention (impls/table/library_conventions.py) are
#: named `lib-<library>`: correctness references, timed only when asked for.
LIBRARY_PREFIX = "lib-"


def select(impls: Iterable[Implementation], only: Sequence[str] = ()) -> list[Implementation]:
    """Implementations whose name matches any of the `only` globs (all when empty)."""
    return [i for i in impls if not only or any(fnmatch.fnmatch(i.name, g) for g in only)]
