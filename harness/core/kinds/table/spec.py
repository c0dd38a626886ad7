"""The Spec: one frozen, validated description of a sinusoidal table.

Every convention in the family is a point in this space (see docs/design.md):

    n_freq     = ceil(d/2) if odd == "extend" else d // 2
    denom      = (d / 2 if odd == "extend" else d // 2) - freq_shift
    inv_freq_k = base ** (-k / denom)                      k = 0 .. n_freq-1
    angle      = scale * (p + offset) * inv_freq_k         p = 0 .. length-1

`layout` places sin/cos pairs side by side ("interleaved") or in two blocks
("concat"); `cos_first` puts cos before sin; an odd width is refused
("error"), zero-padded in the last column ("pad") or given one more column of
the first function ("extend").

Validation happens here, once, so that no implementation ever sees a bad
value and every error names the field and the allowed range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from harness.core.kinds.fields import (DTYPE, DTYPES, FLAG, MAX_ANGLE, MAX_POSITION, Rule, check_fields,
                                       integer, number, one_of)
from harness.core.record import SpecRecord
from harness.util.exitcodes import UsageError

__all__ = ["DTYPES", "LAYOUTS", "MAX_ANGLE", "MAX_POSITION", "ODD_POLICIES", "SPEC_FIELDS", "Spec"]

LAYOUTS = ("interleaved", "concat")
ODD_POLICIES = ("error", "pad", "extend")
#: What each field may hold, checked in this order (harness.core.kinds.fields).
RULES: dict[str, Rule] = {
    "length": integer(1), "d_model": integer(2), "base": number(above=0, not_equal=1),
    "layout": one_of(LAYOUTS), "odd": one_of(ODD_POLICIES), "dtype": DTYPE, "cos_first": FLAG,
    "offset": integer(0), "scale": number(above=0), "freq_shift": number(to_float=False),
}


@dataclass(frozen=True)
class Spec(SpecRecord):
    """A positional-encoding table: shape, convention and output dtype."""

    length: int
    d_model: int
    base: float = 10000.0
    layout: str = "interleaved"
    freq_shift: float = 0
    offset: int = 0
    dtype: str = "float32"
    cos_first: bool = False
    odd: str = "error"
    scale: float = 1.0

    def __post_init__(self) -> None:
        check_fields(self, RULES)
        if self.offset + self.length > MAX_POSITION:
            raise UsageError(
                f"offset + length must be <= 2**53 (positions exact in float64), "
                f"got {self.offset} + {self.length}"
            )
        if self.d_model % 2 and self.odd == "error":
            raise UsageError(
                f"d_model must be even when odd='error', got {self.d_model} "
                "(use odd='pad' or odd='extend' for odd widths)"
            )
        if self.denominator <= 0:
            raise UsageError(
                f"freq_shift must be < {self.half_width} for d_model={self.d_model} "
                f"(denominator d_model/2 - freq_shift must be > 0), got {self.freq_shift!r}"
            )
        self._check_angles()
        self.check_memory(f"a {self.length} x {self.d_model} table")

    def _check_angles(self) -> None:
        """The largest angle must be finite and exact to a fraction of a radian in float64."""
        if self.max_angle <= MAX_ANGLE:
            return
        positions = f"positions up to {self.max_position}"
        if self._fastest_log_freq > 0:   # base < 1: the last frequency is the fastest
            raise UsageError(
                f"base {self.base!r} < 1 makes frequencies grow: the largest angle, "
                f"{self.max_angle:.3g} rad at {positions}, must be <= 2**53 (~9.0e15, where "
                "float64 angles lose their fraction); use base > 1, or a smaller scale, offset "
                "or length")
        allowed = MAX_ANGLE / self.max_position
        raise UsageError(
            f"scale must be > 0 and <= {allowed:.3g} for {positions}: the largest angle, "
            f"scale * {self.max_position} = {self.max_angle:.3g} rad, must be <= 2**53 (~9.0e15, "
            f"where float64 angles lose their fraction), got scale={self.scale!r}")

    @property
    def _fastest_log_freq(self) -> float:
        """ln of the largest inv_freq: 0 (frequency 0) unless base < 1 speeds the later ones up."""
        return max(0.0, -(self.n_freq - 1) / self.denominator * math.log(self.base))

    # -- derived quantities, shared by the reference and implementations ----------
    @property
    def half_width(self) -> float:
        """d/2 for 'extend' (XLM's 2*(j//2)/d), else the paired width d//2."""
        return self.d_model / 2 if self.odd == "extend" else self.d_model // 2

    @property
    def denominator(self) -> float:
        return self.half_width - self.freq_shift

    @property
    def n_freq(self) -> int:
        """Frequencies computed: one per sin/cos pair, plus one for 'extend'."""
        return (self.d_model + 1) // 2 if self.odd == "extend" else self.d_model // 2

    @property
    def max_position(self) -> int:
        return self.offset + self.length - 1

    @property
    def max_angle(self) -> float:
        """Largest angle in the table: scale * max position * the fastest frequency (frequency 0,
        1 rad per position, unless base < 1); inf when it overflows."""
        try:
            fastest = math.exp(self._fastest_log_freq)
        except OverflowError:
            return math.inf
        return self.scale * self.max_position * fastest if self.max_position else 0.0

    @property
    def elements(self) -> int:
        return self.length * self.d_model

    def short(self) -> str:
        """Compact label for tables: only fields that differ from the defaults."""
        default = Spec(1, 2)
        extra = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if f.name not in ("length", "d_model", "dtype")
                 and getattr(self, f.name) != getattr(default, f.name)]
        return " ".join([f"{self.length}x{self.d_model}", self.dtype, *extra])


SPEC_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Spec))
