"""Declarative `supports` for timestep implementations.

Every timestep implementation covers every convention (order, shift, scale, max_period and odd
widths are arguments of the one formula), so what differs is the dtypes a backend can write
and the size a pure-Python loop should be asked for: `BaseSupports` as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.kinds.supports import BaseSupports


@dataclass(frozen=True)
class TimestepSupports(BaseSupports):
    """The dtypes covered and, for slow loops, the most elements worth building."""

    def describe(self) -> str:
        return " ".join([self.describe_dtypes(), "every convention", *self.describe_cap()])
