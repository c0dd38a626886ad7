"""GridSpec: one frozen, validated description of a 2-D or 3-D sincos grid table.

The table has `extra + prod(grid)` rows and `d_model` columns. Rows past the `extra` leading
zero rows (cls / register tokens) walk the grid row-major, the last axis fastest: for a grid
`(T, H, W)` row `extra + r` with `r = ((t * H) + y) * W + x` holds grid point (t, y, x); for
`(H, W)`, `r = y * W + x`. Each axis a gets its own 1-D sinusoidal embedding of width
`widths[a]` (the axes' shares of d_model, `split`); `axis_order` says whose block comes first in
the channels (MAE and diffusers put x first: their "emb_h" is the embedding of the w
coordinate). See docs/grid.md for every field against the libraries.

Validation happens here, once: every bad value raises a ValueError naming the field and the
allowed range, and a field the chosen coordinates do not read must keep its default, so two
different specs never describe the same table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Optional

from harness.core.kinds.fields import (DTYPE, FLAG, MAX_ANGLE, Rule, check_fields, integer, is_finite,
                                       is_int, number, one_of)
from harness.core.record import SpecRecord
from harness.util.exitcodes import UsageError

#: How an axis's sin/cos columns are placed: per axis sin block | cos block (MAE, diffusers),
#: per axis sin cos pairs (DETR), or every axis's sin block then every axis's cos (timm).
LAYOUTS = ("concat", "interleaved", "function_major")
#: Coordinates: the index (plus start, rescaled) or DETR's (i + start) / (n + norm_eps) * norm_scale.
COORDS = ("index", "normalized")
NDIMS = (2, 3)
TWO_PI = 2.0 * math.pi
#: The fields only normalized coordinates read, and their defaults.
NORMALIZED_ONLY = {"norm_eps": 0.0, "norm_scale": TWO_PI}


#: What each scalar field may hold, checked in this order (harness.core.kinds.fields); the
#: tuples (grid, split, axis_order, interpolation_scale) and freq_shift, whose bound is the
#: narrowest axis's width, are checked after, against the others.
RULES: dict[str, Rule] = {
    "d_model": integer(2), "extra": integer(0, note="leading zero rows"), "layout": one_of(LAYOUTS),
    "cos_first": FLAG, "base": number(above=0, not_equal=1), "coords": one_of(COORDS),
    "start": number(note="the coordinate of index 0"), "norm_eps": number(at_least=0),
    "norm_scale": number(above=0), "base_size": number(above=0).or_none(), "dtype": DTYPE,
}


def _int_tuple(name: str, value: Any, ndim: Optional[int], minimum: int) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(is_int(v) and v >= minimum for v in value):
        raise UsageError(f"{name} must be a tuple of integers >= {minimum}, got {value!r}")
    if ndim is not None and len(value) != ndim:
        raise UsageError(f"{name} must have one entry per grid axis ({ndim}), got {value!r}")
    return tuple(int(v) for v in value)


def split_unit(shares: tuple[int, ...]) -> int:
    """The smallest d_model that `shares` splits into even widths (d * s / sum(s) even for all s):
    the multiple every valid d_model is of."""
    twice = 2 * sum(shares)
    return math.lcm(*(twice // math.gcd(s, twice) for s in shares))


@dataclass(frozen=True)
class GridSpec(SpecRecord):
    """A sincos grid table `[extra + prod(grid), d_model]`: shape, convention and output dtype.

    grid                sizes of the axes, slowest first: (H, W) or (T, H, W); rows are row-major
    d_model             columns
    split               the axes' shares of d_model, in grid order (None: equal); widths[a] =
                        d_model * split[a] / sum(split), each even. Give the widths themselves
                        to fix them; stored reduced by their gcd ((128, 128) is (1, 1))
    axis_order          the grid axes whose blocks fill the channels, first to last (None: grid
                        order); MAE / diffusers 2-D are (1, 0): x first
    layout, cos_first   see LAYOUTS; cos_first puts cos before sin wherever sin would be first
    base, freq_shift    axis a's frequency k = base ** (-k / (widths[a] / 2 - freq_shift)),
                        k < widths[a] / 2 (MAE's omega; DETR's temperature ** (2 (j // 2) / D))
    extra               leading rows of zeros (cls / extra tokens)
    coords, start       position of index i on an axis of n points: "index":
                        (i + start) * (base_size / n if base_size else 1) / interpolation_scale[a];
                        "normalized": (i + start) / (n + norm_eps) * norm_scale (DETR: start 1)
    """

    grid: tuple[int, ...]
    d_model: int
    split: Optional[tuple[int, ...]] = None
    axis_order: Optional[tuple[int, ...]] = None
    layout: str = "concat"
    cos_first: bool = False
    base: float = 10000.0
    freq_shift: float = 0.0
    extra: int = 0
    coords: str = "index"
    start: float = 0.0
    norm_eps: float = 0.0
    norm_scale: float = TWO_PI
    base_size: Optional[float] = None
    interpolation_scale: Optional[tuple[float, ...]] = None
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if not isinstance(self.grid, (tuple, list)) or len(self.grid) not in NDIMS:
            raise UsageError(f"grid must be a tuple of {' or '.join(map(str, NDIMS))} axis sizes "
                             f"((H, W) or (T, H, W)), got {self.grid!r}")
        self._set("grid", _int_tuple("grid", self.grid, None, 1))
        check_fields(self, RULES)
        self._check_channels()
        self._check_coordinates()
        if self.max_angle > MAX_ANGLE:
            raise UsageError(f"the largest angle, {self.max_angle:.3g} rad, must be <= 2**53 (where "
                             "float64 angles lose their fraction): use a base > 1 or smaller positions")
        self.check_memory(f"a {self.rows} x {self.d_model} table")

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _check_channels(self) -> None:
        ndim = len(self.grid)
        shares = (1,) * ndim if self.split is None else _int_tuple("split", self.split, ndim, 1)
        divisor = math.gcd(*shares)
        shares = tuple(s // divisor for s in shares)
        unit = split_unit(shares)
        if self.d_model % unit:
            raise UsageError(f"d_model must be a multiple of {unit} to split as {shares} into even "
                             f"per-axis widths (sin/cos pairs), got {self.d_model}")
        self._set("split", shares)
        order = tuple(range(ndim)) if self.axis_order is None else self.axis_order
        order = _int_tuple("axis_order", order, ndim, 0)
        if sorted(order) != list(range(ndim)):
            raise UsageError(f"axis_order must be a permutation of {tuple(range(ndim))}, got {order}")
        self._set("axis_order", order)
        narrowest = min(self.widths) / 2
        if not is_finite(self.freq_shift) or self.freq_shift >= narrowest:
            raise UsageError(f"freq_shift must be a finite number < {narrowest:g} (half the narrowest "
                             f"axis width, so every denominator is > 0), got {self.freq_shift!r}")
        self._set("freq_shift", float(self.freq_shift))

    def _check_coordinates(self) -> None:
        ndim = len(self.grid)
        scales = self.interpolation_scale
        scales = (1.0,) * ndim if scales is None else (scales,) * ndim if is_finite(scales) else scales
        if (not isinstance(scales, (tuple, list)) or len(scales) != ndim
                or not all(is_finite(s) and s > 0 for s in scales)):
            raise UsageError(f"interpolation_scale must be a number > 0 or one per grid axis ({ndim}), "
                             f"got {self.interpolation_scale!r}")
        self._set("interpolation_scale", tuple(float(s) for s in scales))
        if self.coords == "index":
            unread = [f"{k}={getattr(self, k)!r}" for k, v in NORMALIZED_ONLY.items()
                      if getattr(self, k) != v]
        else:
            unread = [f"base_size={self.base_size!r}"] if self.base_size is not None else []
            unread += [f"interpolation_scale={scales!r}"] if any(s != 1.0 for s in scales) else []
        if unread:
            raise UsageError(f"coords={self.coords!r} does not read {', '.join(unread)}: leave it at "
                             "its default")

    # -- derived quantities (the oracle reads none of them) ------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.grid)

    @property
    def widths(self) -> tuple[int, ...]:
        """Columns of each axis's block, in grid order."""
        return tuple(self.d_model * s // sum(self.split) for s in self.split)

    @property
    def cells(self) -> int:
        return math.prod(self.grid)

    @property
    def rows(self) -> int:
        return self.extra + self.cells

    @property
    def rescale(self) -> tuple[float, ...]:
        """Per axis, what (i + start) is multiplied by to give the position."""
        if self.coords == "normalized":
            return tuple(self.norm_scale / (n + self.norm_eps) for n in self.grid)
        return tuple((self.base_size / n if self.base_size else 1.0) / s
                     for n, s in zip(self.grid, self.interpolation_scale))

    @property
    def max_position(self) -> float:
        """The largest |position| on any axis."""
        return max(max(abs(self.start), abs(n - 1 + self.start)) * r for n, r in zip(self.grid, self.rescale))

    @property
    def max_angle(self) -> float:
        """The largest |angle|: the largest position times the fastest frequency."""
        fastest = 0.0
        for width in self.widths:
            half = width // 2
            fastest = max(fastest, -(half - 1) / (half - self.freq_shift) * math.log(self.base))
        try:
            return self.max_position * math.exp(fastest)
        except OverflowError:
            return math.inf

    @property
    def elements(self) -> int:
        return self.rows * self.d_model

    def short(self) -> str:
        """Compact label: shape, dtype and only the fields that differ from the defaults."""
        default = {f.name: f.default for f in fields(self)}
        default.update(split=(1,) * self.ndim, axis_order=tuple(range(self.ndim)),
                       interpolation_scale=(1.0,) * self.ndim)
        extra = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if f.name not in ("grid", "d_model", "dtype") and getattr(self, f.name) != default[f.name]]
        shape = "x".join(map(str, self.grid))
        return " ".join([f"{shape}x{self.d_model}", self.dtype, *extra])


GRID_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(GridSpec))
