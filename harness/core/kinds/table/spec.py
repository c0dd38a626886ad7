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
import numbers
from dataclasses import dataclass, fields
from typing import Any

from harness.core.record import SpecRecord
from harness.util import memory

LAYOUTS = ("interleaved", "concat")
ODD_POLICIES = ("error", "pad", "extend")
DTYPES = ("float16", "bfloat16", "float32", "float64")
#: Positions must be exact integers in float64, the reference precision.
MAX_POSITION = 2**53
#: Angles past this have no fractional part in float64: sin and cos of them are noise, and
#: past 1.8e308 the reference is NaN. The largest angle of a table must stay below it.
MAX_ANGLE = 2.0**53


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


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
        if not _is_int(self.length) or self.length < 1:
            raise ValueError(f"length must be an integer >= 1, got {self.length!r}")
        if not _is_int(self.d_model) or self.d_model < 2:
            raise ValueError(f"d_model must be an integer >= 2, got {self.d_model!r}")
        if not _is_real(self.base) or not math.isfinite(self.base) or self.base <= 0 or self.base == 1:
            raise ValueError(f"base must be a finite number > 0 and != 1, got {self.base!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.odd not in ODD_POLICIES:
            raise ValueError(f"odd must be one of {ODD_POLICIES}, got {self.odd!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not isinstance(self.cos_first, bool):
            raise ValueError(f"cos_first must be True or False, got {self.cos_first!r}")
        if not _is_int(self.offset) or self.offset < 0:
            raise ValueError(f"offset must be an integer >= 0, got {self.offset!r}")
        if self.offset + self.length > MAX_POSITION:
            raise ValueError(
                f"offset + length must be <= 2**53 (positions exact in float64), "
                f"got {self.offset} + {self.length}"
            )
        if not _is_real(self.scale) or not math.isfinite(self.scale) or self.scale <= 0:
            raise ValueError(f"scale must be a finite number > 0, got {self.scale!r}")
        if self.d_model % 2 and self.odd == "error":
            raise ValueError(
                f"d_model must be even when odd='error', got {self.d_model} "
                "(use odd='pad' or odd='extend' for odd widths)"
            )
        if not _is_real(self.freq_shift) or not math.isfinite(self.freq_shift):
            raise ValueError(f"freq_shift must be a finite number, got {self.freq_shift!r}")
        if self.denominator <= 0:
            raise ValueError(
                f"freq_shift must be < {self.half_width} for d_model={self.d_model} "
                f"(denominator d_model/2 - freq_shift must be > 0), got {self.freq_shift!r}"
            )
        object.__setattr__(self, "base", float(self.base))
        object.__setattr__(self, "scale", float(self.scale))
        self._check_angles()
        if self.nbytes_reference > memory.CHECK_ABOVE:
            memory.check_fits(self.nbytes_reference, what=f"a {self.length} x {self.d_model} float64 table")

    def _check_angles(self) -> None:
        """The largest angle must be finite and exact to a fraction of a radian in float64."""
        if self.max_angle <= MAX_ANGLE:
            return
        positions = f"positions up to {self.max_position}"
        if self._fastest_log_freq > 0:   # base < 1: the last frequency is the fastest
            raise ValueError(
                f"base {self.base!r} < 1 makes frequencies grow: the largest angle, "
                f"{self.max_angle:.3g} rad at {positions}, must be <= 2**53 (~9.0e15, where "
                "float64 angles lose their fraction); use base > 1, or a smaller scale, offset "
                "or length")
        allowed = MAX_ANGLE / self.max_position
        raise ValueError(
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
