"""Declarative `supports` for timestep implementations (the table kind's `Supports` reads
table fields: layout, odd policy, offset).

Every timestep implementation covers every convention (order, shift, scale, max_period and odd
widths are arguments of the one formula), so what differs is the dtypes a backend can write
and the size a pure-Python loop should be asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.core.kinds.timestep.spec import TimestepSpec
from harness.core.kinds.table.spec import DTYPES


@dataclass(frozen=True)
class TimestepSupports:
    """The dtypes covered and, for slow loops, the most elements worth building."""

    dtypes: tuple[str, ...] = DTYPES
    max_elements: Optional[int] = None
    why_not_dtypes: str = ""      # said when a dtype is refused, e.g. "diffusers computes in float32"

    def __call__(self, spec: TimestepSpec) -> Optional[str]:
        if spec.dtype not in self.dtypes:
            why = f" ({self.why_not_dtypes})" if self.why_not_dtypes else ""
            return f"dtype {spec.dtype} not supported (only {'/'.join(self.dtypes)}){why}"
        elements = spec.count * spec.dim
        if self.max_elements is not None and elements > self.max_elements:
            return f"{elements} elements: more than the {self.max_elements} worth building here"
        return None

    def describe(self) -> str:
        parts = ["/".join(d.replace("float", "f") for d in self.dtypes), "every convention"]
        if self.max_elements is not None:
            parts.append(f"<= {self.max_elements} elements")
        return " ".join(parts)
