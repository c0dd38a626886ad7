"""Declarative `supports` for the rotary implementations.

Every rope_type comes through `spec.inv_freq()` and `spec.attention_scaling`, so what varies
between implementations is only the dtypes their backend has, the layouts they place, and, for
pure Python, how many elements one call may touch before verify would wait on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from harness.core.kinds.rotary.apply import APPLY
from harness.core.kinds.rotary.spec import LAYOUTS
from harness.core.kinds.supports import BaseSupports

#: q and k rows one apply call rotates per position, at the larger of the batch x heads verify
#: and bench give it by default (the apply workload's own numbers): a call's work is at most this
#: many rows of head_dim per position.
PYTHON_ROWS_PER_POSITION = len(APPLY.parts) * max(APPLY.verify_batch * APPLY.verify_heads,
                                                  APPLY.bench_batch * APPLY.bench_heads)


@dataclass(frozen=True)
class RotarySupports(BaseSupports):
    """Which rotary specs an implementation covers; `max_elements` bounds a call's work."""

    layouts: tuple[str, ...] = LAYOUTS

    def work(self, spec: Any) -> int:
        return spec.length * spec.head_dim * PYTHON_ROWS_PER_POSITION

    def too_big(self, spec: Any) -> str:
        return (f"too big for pure Python: {spec.length} positions x head_dim {spec.head_dim} "
                f"x {PYTHON_ROWS_PER_POSITION} rows > {self.max_elements} elements per call")

    def refuse_convention(self, spec: Any) -> Optional[str]:
        if spec.layout not in self.layouts:
            return f"layout {spec.layout!r} not supported (only {'/'.join(self.layouts)})"
        return None

    def describe(self) -> str:
        return " ".join(["/".join(self.layouts), self.describe_dtypes(), "every rope_type", "partial",
                         "offset", *self.describe_cap()])
