"""Numbers as people read them, shared by the progress lines and the report."""

from __future__ import annotations

import math

#: docs/design.md (measurement rules): a cell whose IQR/median exceeds this is flagged as noisy.
NOISY_IQR = 0.10

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def seconds(value: float | None) -> str:
    """3 significant digits in the largest unit that keeps the value >= 1: '84.1 ms'."""
    if value is None or not math.isfinite(value):
        return "-"
    for scale, unit in _TIME_UNITS:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"
