"""What every kind's declarative `supports` checks first: the dtypes, and a size cap.

A `supports` is any `spec -> None | reason` callable. Each kind's declarative one
(`harness.Supports` for the 1-D table, `RotarySupports`, `GridSupports`, `TimestepSupports`) is
a `BaseSupports` that adds the convention fields only its kind has, so the dtype refusal and
the "too big for a slow loop" refusal are written once and read alike in `python -m harness list`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from harness.core.kinds.fields import DTYPES


@dataclass(frozen=True)
class BaseSupports:
    """The dtypes an implementation writes (`why_dtypes`: why not the others) and, for a slow
    loop, the most elements (`work`) one call is worth: None, any size."""

    dtypes: tuple[str, ...] = field(default=DTYPES, kw_only=True)
    max_elements: Optional[int] = field(default=None, kw_only=True)
    why_dtypes: str = field(default="", kw_only=True)

    def __call__(self, spec: Any) -> Optional[str]:
        if spec.dtype not in self.dtypes:
            why = f": {self.why_dtypes}" if self.why_dtypes else ""
            return f"dtype {spec.dtype} not supported (only {'/'.join(self.dtypes)}){why}"
        if self.max_elements is not None and self.work(spec) > self.max_elements:
            return self.too_big(spec)
        return self.refuse_convention(spec)

    def work(self, spec: Any) -> int:
        """Elements one call touches (the kind's spec's `elements` unless a kind says more)."""
        return spec.elements

    def too_big(self, spec: Any) -> str:
        return f"{self.work(spec)} elements: more than the {self.max_elements} worth building here"

    def refuse_convention(self, spec: Any) -> Optional[str]:
        """Why the kind's own convention fields rule `spec` out (None: they do not)."""
        return None

    def describe_dtypes(self) -> str:
        return "/".join(d.replace("float", "f") for d in self.dtypes)

    def describe_cap(self) -> list[str]:
        return [f"<= {self.max_elements} elements"] if self.max_elements is not None else []
