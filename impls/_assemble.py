"""Place sin/cos blocks into a table by the Spec's convention, for any array library.

The same four conventions (layout, cos_first, odd 'pad', odd 'extend') apply to
NumPy, torch and TensorFlow; only the names of stack/concat differ, so each
backend passes its own `interleave` and `concat`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from harness import Spec
from harness.supports import Supports

Interleave = Callable[[Any, Any], Any]   # [L, h], [L, h] -> [L, 2h], columns a0 b0 a1 b1 ...
Concat = Callable[[Sequence[Any]], Any]  # along the last axis

#: What the general variants cover: every convention of the Spec.
EVERY_CONVENTION = Supports(cos_first=True, odd=("error", "pad", "extend"), scale=True)
INTERLEAVED = replace(EVERY_CONVENTION, layouts=("interleaved",))
CONCAT = replace(EVERY_CONVENTION, layouts=("concat",))


def assemble(spec: Spec, sin: Any, cos: Any, zero_col: Any,
             interleave: Interleave, concat: Concat) -> Any:
    """`sin`, `cos`: [length, n_freq] blocks; `zero_col`: [length, 1] zeros (for 'pad')."""
    first, second = (cos, sin) if spec.cos_first else (sin, cos)
    h = spec.d_model // 2
    if spec.layout == "interleaved":
        parts = [interleave(first[:, :h], second[:, :h])]
        if spec.n_freq > h:          # 'extend': one more column of the first function
            parts.append(first[:, h:])
    else:
        parts = [first, second[:, :h]]
    if spec.odd == "pad" and spec.d_model % 2:
        parts.append(zero_col)
    return parts[0] if len(parts) == 1 else concat(parts)
