"""TimestepSpec: one frozen, validated description of a diffusion timestep embedding.

A vector of timesteps t (float, possibly fractional) becomes a `[len(t), dim]` embedding
(diffusers' `get_timestep_embedding`, DDPM's and guided-diffusion's `timestep_embedding`):

    half       = dim // 2
    freq_k     = exp(-ln(max_period) * k / (half - freq_shift))       k = 0 .. half-1
    angle      = scale * t * freq_k
    columns    f(angle_0) .. f(angle_{half-1}) g(angle_0) .. g(angle_{half-1}) [0 if dim is odd]
               (f, g) = (sin, cos), or (cos, sin) with cos_first (diffusers' flip_sin_to_cos)

`freq_shift` is diffusers' `downscale_freq_shift` (1: DDPM's schedule from 1 to 1/max_period;
0: guided-diffusion's). Validation happens here once, so no implementation sees a bad value and
every error names the field and its allowed range.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping

import numpy as np

from harness.core.kinds.fields import (DTYPE, FLAG, MAX_ANGLE, Rule, check_fields, integer, is_finite,
                                       number)
from harness.core.record import SpecRecord
from harness.util import memory
from harness.util.exitcodes import UsageError

#: What each field may hold, checked in this order (harness.core.kinds.fields); freq_shift's
#: bound depends on dim and is checked after.
RULES: dict[str, Rule] = {
    "dim": integer(2, note="one sin/cos pair"), "max_period": number(above=1),
    "freq_shift": number(), "scale": number(above=0), "cos_first": FLAG, "dtype": DTYPE,
}
#: What `uniform` and `random` spread timesteps over: [0, t_max).
T_MAX = number(above=0)
COUNT = integer(1)


def _timesteps(values: Any) -> tuple[float, ...]:
    """The timesteps as a tuple of floats, or a ValueError saying what is wrong with them."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise UsageError(f"timesteps must be a non-empty sequence of finite numbers >= 0, "
                         f"got {type(values).__name__}")
    items = tuple(values)
    if not items:
        raise UsageError("timesteps must be a non-empty sequence of finite numbers >= 0, got none")
    types = set(map(type, items))
    if types <= {float, int} and _valid(items):
        return items if types == {float} else tuple(map(float, items))
    for i, t in enumerate(items):
        if not is_finite(t) or t < 0:
            raise UsageError(f"timesteps must be finite numbers >= 0, got {t!r} at index {i}")
    return tuple(float(t) for t in items)


def _valid(items: tuple) -> bool:
    """Whether plain floats and ints (not bools) are all finite and >= 0, checked at C speed:
    bench builds a spec of up to 65,536 timesteps per cell, and the check item by item
    (numbers.Real through the ABC machinery) took most of a default sweep's planning. False
    sends the items through the check that names the first bad one."""
    try:
        values = np.array(items, dtype=np.float64)
    except OverflowError:
        return False
    return bool(np.isfinite(values).all() and (values >= 0).all())


@dataclass(frozen=True)
class TimestepSpec(SpecRecord):
    """Sinusoidal embeddings of `timesteps`: width, schedule, column order and output dtype."""

    timesteps: tuple[float, ...]
    dim: int
    max_period: float = 10000.0
    freq_shift: float = 1.0
    cos_first: bool = False
    scale: float = 1.0
    dtype: str = "float32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "timesteps", _timesteps(self.timesteps))
        check_fields(self, RULES)
        if self.freq_shift >= self.half:
            raise UsageError(
                f"freq_shift must be < dim // 2 = {self.half} for dim={self.dim} (the divisor "
                f"dim // 2 - freq_shift must be > 0), got {self.freq_shift!r}")
        if self.max_angle > MAX_ANGLE:
            raise UsageError(
                f"timesteps * scale must be <= 2**53 (~9.0e15, where float64 angles lose their "
                f"fraction), got {self.max_timestep:g} * {self.scale:g} = {self.max_angle:.3g}")
        self.check_memory(f"a {self.count} x {self.dim} embedding")

    @classmethod
    def uniform(cls, count: int, dim: int, t_max: float = 1000.0, **fields: Any) -> "TimestepSpec":
        """`count` timesteps spread evenly over [0, t_max): DDPM's integer steps when
        t_max == count, fractional ones otherwise."""
        COUNT.check("count", count)
        t_max = T_MAX.check("t_max", t_max)
        _check_fits(count, dim)
        # i * t_max / count for each i, as float64 arithmetic does it in Python, at C speed
        return cls(tuple((np.arange(count, dtype=np.float64) * t_max / count).tolist()), dim,
                   **fields)

    @classmethod
    def random(cls, count: int, dim: int, seed: int = 0, t_max: float = 1000.0,
               **fields: Any) -> "TimestepSpec":
        """`count` seeded random fractional timesteps in [0, t_max) (continuous-time samplers)."""
        COUNT.check("count", count)
        t_max = T_MAX.check("t_max", t_max)
        _check_fits(count, dim)
        rng = random.Random(seed)
        return cls(tuple(rng.uniform(0.0, t_max) for _ in range(count)), dim, **fields)

    # -- derived quantities ------------------------------------------------------------------
    @property
    def count(self) -> int:
        return len(self.timesteps)

    @property
    def half(self) -> int:
        """Frequencies: one sin/cos pair each; an odd width's last column is zero."""
        return self.dim // 2

    @property
    def denominator(self) -> float:
        return self.half - self.freq_shift

    @property
    def max_timestep(self) -> float:
        return max(self.timesteps)

    @property
    def max_angle(self) -> float:
        """Largest angle: scale * the largest timestep * frequency 0 (1 rad per unit)."""
        return self.scale * self.max_timestep

    @property
    def elements(self) -> int:
        return self.count * self.dim

    def short(self) -> str:
        """Compact label: count x dim, the timesteps' range, dtype, fields off the defaults."""
        default = TimestepSpec((0.0,), 2, freq_shift=0.0)
        extra = [f"{name}={getattr(self, name):g}" for name in ("max_period", "scale")
                 if getattr(self, name) != getattr(default, name)]
        extra.append(f"shift={self.freq_shift:g}")
        if self.cos_first:
            extra.append("cos_first")
        span = f"t={min(self.timesteps):g}..{self.max_timestep:g}"
        return " ".join([f"{self.count}x{self.dim}", span, self.dtype, *extra])


TIMESTEP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TimestepSpec))


#: Bytes one timestep costs while a spec is built: a Python float in the tuple and its slot.
TIMESTEP_BYTES = 32


def _check_fits(count: int, dim: Any) -> None:
    """Refuse `count` timesteps of width `dim` before building their tuple: the check in
    __post_init__ comes only after the tuple exists."""
    width = RULES["dim"].check("dim", dim)
    nbytes = count * (width * 8 + TIMESTEP_BYTES)
    if nbytes > memory.CHECK_ABOVE:
        memory.check_fits(nbytes, f"a {count} x {width} float64 embedding")
