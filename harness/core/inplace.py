"""In-place kernels: what their factory returns, and how every call gets fresh inputs.

A kernel that writes its result into its inputs (Liger's and FlashAttention's rotary, vLLM's
`rotary_embedding`) cannot be called twice on the same inputs: the second call would rotate
the rotated values. So an implementation that declares `in_place` returns `InPlace(reset,
call)`: `reset()` puts a fresh copy of its inputs into the arrays it owns, `call()` does the
work there and returns the arrays it wrote. verify calls `reset` before every call and judges
what `call` returned; bench calls it before every timed round, outside the timed region.

A call-time kernel (a factory taking the spec only, harness.core.handover) needs none of this:
the harness hands every call fresh inputs, and it rotates them where they lie.

The declaration is checked, not trusted: an in-place declaration whose factory returns a plain
callable, or the converse, is a failed case with the reason; and `written` finds an
out-of-place implementation that wrote into the inputs it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class InPlace:
    """An in-place kernel: `reset()` (untimed) refreshes its inputs, `call()` writes into them
    and returns them."""

    reset: Callable[[], None]
    call: Callable[[], Any]

    def fresh_call(self) -> Any:
        """One call on fresh inputs: what verify judges."""
        self.reset()
        return self.call()


def declared_in_place(forms: Any) -> bool:
    """Whether an implementation's declared forms say it works in place."""
    return bool(getattr(forms, "in_place", False))


def calling(built: Any, in_place: bool, at_call: bool = False
            ) -> tuple[Optional[Callable[..., Any]], str]:
    """(the callable verify judges, "") or (None, why the factory's result does not match the
    declaration). A call-time implementation (harness.core.handover) is handed fresh inputs by
    the harness every call, so an in-place one returns a plain callable that writes into them."""
    if at_call:
        if isinstance(built, InPlace) or not callable(built):
            return None, (f"its factory took the spec only, so it returns fn(*inputs) (an "
                          f"in-place one writing into them), not {type(built).__name__}")
        return built, ""
    if in_place:
        if isinstance(built, InPlace):
            return built.fresh_call, ""
        return None, (f"declared in_place, but its factory returned {type(built).__name__}, not "
                      "harness.InPlace(reset, call)")
    if isinstance(built, InPlace):
        return None, "its factory returned harness.InPlace, but it did not declare in_place=True"
    if not callable(built):
        return None, f"its factory returned {type(built).__name__}, not a callable"
    return built, ""


def written(given: Sequence[Any], handed: Sequence[Any], names: Sequence[str]) -> tuple[str, ...]:
    """The names of the NumPy inputs `handed` to an implementation that no longer equal the ones
    `given` (their originals, kept apart)."""
    return tuple(names[i] if i < len(names) else f"#{i + 1}"
                 for i, (a, b) in enumerate(zip(given, handed))
                 if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True))
