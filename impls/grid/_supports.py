"""What a grid implementation supports: dtypes, and a size cap for the pure-Python loops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.core.kinds.grid import GridSpec
from harness.core.kinds.table.spec import DTYPES


@dataclass(frozen=True)
class GridSupports:
    """Every grid convention, in `dtypes`, up to `max_elements` (None: any size)."""

    dtypes: tuple[str, ...] = DTYPES
    max_elements: Optional[int] = None

    def __call__(self, spec: GridSpec) -> Optional[str]:
        if spec.dtype not in self.dtypes:
            return f"dtype {spec.dtype} not supported (only {'/'.join(self.dtypes)})"
        if self.max_elements is not None and spec.rows * spec.d_model > self.max_elements:
            return f"{spec.rows} x {spec.d_model} is past {self.max_elements} elements (too slow)"
        return None

    def describe(self) -> str:
        cap = f" <= {self.max_elements} elements" if self.max_elements else ""
        return "every grid convention " + "/".join(d.replace("float", "f") for d in self.dtypes) + cap
