"""Declarative `supports` for the 1-D table: which conventions an implementation covers.

A plugin may pass any `spec -> None | reason` callable as `supports`; the
built-ins use `Supports(...)`, which is also such a callable and can describe
itself for `python -m harness list`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.core.kinds.supports import BaseSupports
from harness.core.kinds.table.spec import LAYOUTS, Spec


@dataclass(frozen=True)
class Supports(BaseSupports):
    """Conventions covered. Defaults are everything except the narrow extras."""

    layouts: tuple[str, ...] = LAYOUTS
    dtypes: tuple[str, ...] = field(default=("float32", "float64"), kw_only=True)
    freq_shifts: Optional[tuple[float, ...]] = None   # None: any value
    base: bool = True                                 # any base, not only 10000
    offset: bool = True
    cos_first: bool = False
    odd: tuple[str, ...] = ("error",)                 # policies for odd widths
    scale: bool = False

    def refuse_convention(self, spec: Spec) -> Optional[str]:
        if spec.layout not in self.layouts:
            return f"layout {spec.layout!r} not supported (only {'/'.join(self.layouts)})"
        if self.freq_shifts is not None and spec.freq_shift not in self.freq_shifts:
            return f"freq_shift={spec.freq_shift} not supported (only {self.freq_shifts})"
        if not self.base and spec.base != 10000.0:
            return "fixed base 10000"
        if not self.offset and spec.offset:
            return "offset not supported"
        if not self.cos_first and spec.cos_first:
            return "cos_first not supported"
        if spec.d_model % 2 and spec.odd not in self.odd:
            return f"odd width with odd={spec.odd!r} not supported"
        if not self.scale and spec.scale != 1.0:
            return "scale not supported"
        return None

    def describe(self) -> str:
        parts = ["/".join(self.layouts), self.describe_dtypes()]
        if self.freq_shifts is not None:
            parts.append("shift=" + ",".join(f"{s:g}" for s in self.freq_shifts))
        parts += [flag for flag, on in (("base", self.base), ("offset", self.offset),
                                        ("cos_first", self.cos_first), ("scale", self.scale)) if on]
        odd = [p for p in self.odd if p != "error"]
        if odd:
            parts.append("odd=" + "/".join(odd))
        return " ".join(parts + self.describe_cap())
