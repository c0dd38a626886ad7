"""Human-readable numbers for report cells: ratios, errors, changes (times: harness.util.units).

One place for these so that every table and plot label reads the same way.
"""

from __future__ import annotations

import math


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def ratio(value: float | None) -> str:
    """A speedup or roof multiple: '12.3x', '0.52x'."""
    if _missing(value):
        return "-"
    return f"{value:,.0f}x" if abs(value) >= 100 else f"{value:.3g}x"


def err(value: float | None) -> str:
    return "-" if _missing(value) else f"{value:.2g}"


def pct(value: float | None) -> str:
    """A change in percent with its sign: '+12%', '-3.4%'."""
    return "-" if _missing(value) else f"{value:+.3g}%"


def threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def count(n: int) -> str:
    """Large integers with thousands separators: 262,143."""
    return f"{n:,}"
