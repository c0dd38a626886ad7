"""RotarySpec: one frozen, validated description of a rotary (RoPE) cos/sin cache.

Field names are Hugging Face's `rope_scaling` / `rope_parameters` keys where one exists, so a
config reads straight into a spec (`RotarySpec.from_hf_config`). Validation happens here, once:
every bad value raises a ValueError naming the field and the allowed range, and a field the
chosen `rope_type` does not read must keep its default, so two different specs never describe
the same cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Optional

import numpy as np

from harness.core.kinds.fields import (DTYPE, FLAG, MAX_ANGLE, MAX_POSITION, Rule, check_fields,
                                       integer, is_finite, is_int, number, one_of)
from harness.core.kinds.rotary import scaling
from harness.core.kinds.rotary.forms import POSITION_IDS, QK_LAYOUTS
from harness.core.kinds.rotary.rope_types import REQUIRES, ROPE_TYPES, SCALING_FIELDS, USES
from harness.core.record import SpecRecord
from harness.util.exitcodes import UsageError

LAYOUTS = ("half", "interleaved")

#: What each field may hold, checked in this order (harness.core.kinds.fields); rotary_dim,
#: the factor lists and what each rope_type reads are checked after, against the others.
RULES: dict[str, Rule] = {
    "length": integer(1), "head_dim": integer(2, even=True), "offset": integer(0),
    "base": number(above=1), "layout": one_of(LAYOUTS), "dtype": DTYPE, "rope_type": one_of(ROPE_TYPES),
    "factor": number(above=0), "low_freq_factor": number(above=0), "beta_slow": number(above=0),
    "beta_fast": number(), "high_freq_factor": number(),
    "attention_factor": number(above=0).or_none(False), "mscale": number().or_none(False),
    "mscale_all_dim": number().or_none(False), "truncate": FLAG,
    "original_max_position_embeddings": integer(2).or_none(), "max_position_embeddings": integer(2).or_none(),
    "qk_layout": one_of(QK_LAYOUTS), "kv_heads": integer(1, note="k's heads; None: as many as q's").or_none(),
    "position_ids": one_of(POSITION_IDS),
}


@dataclass(frozen=True)
class RotarySpec(SpecRecord):
    """A rotary cache: positions offset .. offset+length-1, the first `rot` dims of a head."""

    length: int
    head_dim: int
    rotary_dim: Optional[int] = None
    base: float = 10000.0
    layout: str = "half"
    offset: int = 0
    dtype: str = "float32"
    rope_type: str = "default"
    factor: float = 1.0
    original_max_position_embeddings: Optional[int] = None
    max_position_embeddings: Optional[int] = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    short_factor: Optional[tuple[float, ...]] = None
    long_factor: Optional[tuple[float, ...]] = None
    attention_factor: Optional[float] = None
    mscale: Optional[float] = None
    mscale_all_dim: Optional[float] = None
    truncate: bool = True
    #: apply only (forms.py): how q, k and the position ids are handed over; the cache is the same
    qk_layout: str = "bhsd"
    kv_heads: Optional[int] = None
    position_ids: str = "seq"

    def __post_init__(self) -> None:
        check_fields(self, RULES)
        self._check_shape()
        self._check_scaling()
        self._check_rope_type()
        self._check_angles()
        self.check_memory(f"a 2 x {self.length} x {self.rot} rotary cache")

    # -- validation -------------------------------------------------------------------------
    def _check_shape(self) -> None:
        if self.rotary_dim is not None and (not is_int(self.rotary_dim) or self.rotary_dim % 2
                                            or not 2 <= self.rotary_dim <= self.head_dim):
            raise UsageError(f"rotary_dim must be None (= head_dim) or an even integer with "
                             f"2 <= rotary_dim <= head_dim={self.head_dim}, got {self.rotary_dim!r}")
        if self.rotary_dim == self.head_dim:
            object.__setattr__(self, "rotary_dim", None)   # one spelling of full rotary
        if self.offset + self.length > MAX_POSITION:
            raise UsageError(f"offset + length must be <= 2**53 (positions exact in float64), "
                             f"got {self.offset} + {self.length}")

    def _check_scaling(self) -> None:
        if self.beta_fast <= self.beta_slow:
            raise UsageError(f"beta_fast must be > beta_slow={self.beta_slow}, got {self.beta_fast!r}")
        if self.high_freq_factor <= self.low_freq_factor:
            raise UsageError(f"high_freq_factor must be > low_freq_factor={self.low_freq_factor}, "
                             f"got {self.high_freq_factor!r}")
        for name in ("short_factor", "long_factor"):
            self._factor_list(name)

    def _factor_list(self, name: str) -> None:
        value = getattr(self, name)
        if value is None:
            return
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise UsageError(f"{name} must be None or a sequence of n_freq={self.n_freq} numbers > 0, "
                             f"got {value!r}")
        if len(value) != self.n_freq or not all(is_finite(v) and v > 0 for v in value):
            raise UsageError(f"{name} must hold n_freq = rotary_dim // 2 = {self.n_freq} finite numbers "
                             f"> 0, got {len(value)} values: {list(value)[:8]}")
        object.__setattr__(self, name, tuple(float(v) for v in value))

    def _check_rope_type(self) -> None:
        used = USES[self.rope_type]
        default = _DEFAULTS
        for name in SCALING_FIELDS:
            if name not in used and getattr(self, name) != default[name]:
                users = [t for t, names in USES.items() if name in names]
                raise UsageError(f"{name} is not read by rope_type={self.rope_type!r} and must keep its "
                                 f"default {default[name]!r} (rope_type one of {users} reads it), "
                                 f"got {getattr(self, name)!r}")
        for name in REQUIRES.get(self.rope_type, ()):
            if getattr(self, name) is None:
                want = "n_freq numbers > 0" if name.endswith("_factor") else "an integer >= 2"
                raise UsageError(f"{name} is required for rope_type={self.rope_type!r} ({want}), got None")
        if self.rope_type == "dynamic" and self.rot < 4:
            raise UsageError(f"rotary_dim must be >= 4 for rope_type='dynamic' (its base is raised to "
                             f"rot / (rot - 2)), got {self.rot}")

    def _check_angles(self) -> None:
        """The largest angle must be exact to a fraction of a radian in float64."""
        fastest = float(np.max(self.inv_freq()))
        if not math.isfinite(fastest) or self.max_position * fastest > MAX_ANGLE:
            raise UsageError(f"the largest angle, max_position {self.max_position} x the fastest "
                             f"inv_freq {fastest:.3g}, must be <= 2**53 (~9.0e15, where float64 angles "
                             "lose their fraction): use a smaller offset or length, or a larger factor")

    # -- derived members ----------------------------------------------------------------------
    @property
    def rot(self) -> int:
        """The rotated width: rotary_dim, or head_dim when that is None."""
        return self.head_dim if self.rotary_dim is None else self.rotary_dim

    @property
    def n_freq(self) -> int:
        return self.rot // 2

    @property
    def seq_len(self) -> int:
        """The sequence length dynamic and longrope scaling see: max position + 1."""
        return self.offset + self.length

    @property
    def max_position(self) -> int:
        return self.offset + self.length - 1

    def inv_freq(self) -> np.ndarray:
        """float64 `[n_freq]` inverse frequencies with the rope_type's scaling applied."""
        return scaling.inv_freq(self)

    @property
    def attention_scaling(self) -> float:
        """What multiplies cos and sin (yarn's mscale, longrope's factor; 1.0 for the rest)."""
        return scaling.attention_scaling(self)

    @property
    def elements(self) -> int:
        """Elements of the cache: cos and sin, each [length, rot]."""
        return 2 * self.length * self.rot

    @classmethod
    def from_hf_config(cls, config: Any, length: Optional[int] = None,
                       dtype: str = "float32") -> "RotarySpec":
        """The spec of a transformers config (a dict or a PretrainedConfig); see config.py."""
        from harness.core.kinds.rotary.config import hf_config_fields

        return cls(**hf_config_fields(config, length=length, dtype=dtype))

    def short(self) -> str:
        """Compact label for tables: only fields that differ from the defaults."""
        extra = [f"{name}={_short_value(getattr(self, name))}" for name, value in _DEFAULTS.items()
                 if name not in ("length", "head_dim", "dtype") and getattr(self, name) != value]
        return " ".join([f"{self.length}x{self.head_dim}", self.dtype, *extra])


def _short_value(value: Any) -> str:
    if isinstance(value, tuple):
        return f"[{len(value)} values]"
    return str(value)


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RotarySpec)
                             if f.name not in ("length", "head_dim")}
ROTARY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RotarySpec))
