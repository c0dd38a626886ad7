"""What a grid implementation supports: dtypes, and a size cap for the pure-Python loops."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.kinds.grid.spec import GridSpec
from harness.core.kinds.supports import BaseSupports


@dataclass(frozen=True)
class GridSupports(BaseSupports):
    """Every grid convention, in `dtypes`, up to `max_elements` (None: any size)."""

    def too_big(self, spec: GridSpec) -> str:
        return f"{spec.rows} x {spec.d_model} is past {self.max_elements} elements (too slow)"

    def describe(self) -> str:
        return " ".join(["every grid convention", self.describe_dtypes(), *self.describe_cap()])
