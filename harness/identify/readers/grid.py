"""Identify a 2-D or 3-D sincos grid table (a ViT / MAE / DiT `pos_embed`, a video grid).

Leading rows of zeros are the extra (cls / register) tokens; the other rows must factor into a
grid, square first, then the other 2-D factorizations nearest a square, then 3-D ones when no
2-D grid fits. For each grid the named conventions of the grid kind are tried, then every axis
order, layout and sin/cos order with index coordinates; each is rebuilt by the kind's reference
and judged by its tolerance, the first that fits is the answer.
"""

from __future__ import annotations

import itertools
import math
from typing import Iterator, Optional, Sequence

import numpy as np

from harness.core import kinds
from harness.identify.readers.answer import Answer, check, decide
from harness.identify.readers.arrays import POS_EMBED, matrix
from harness.identify.readers.arrays import read as read_array
from harness.identify.files import Stored
from harness.util.exitcodes import UsageError

#: Grids tried per table, and the largest table an unnamed array is tried as a grid at.
MAX_GRIDS = 6
AUTO_ELEMENTS = 1 << 20
#: 3-D splits tried besides the named conventions' (equal; diffusers' t: d/4).
SPLITS_3D = ((1, 1, 1), (2, 3, 3))
#: diffusers' get_2d_sincos_pos_embed base_size default and PixArt's (positions are rescaled
#: when the grid is not that size).
DIFFUSERS_BASE_SIZES = (16.0, 32.0, 64.0)


#: the array names this reader takes; it is tried last and takes a `[1, n, d]` array of any name
CLAIMS = (POS_EMBED,)
LAST = True


def read(stored: Sequence[Stored], names: dict, timesteps: Optional[str],
         forced: bool) -> Optional[list[tuple[str, Answer]]]:
    """identify's reader (the grid reads the arrays as stored)."""
    return search(stored, forced=forced)


def search(stored: Sequence[Stored], forced: bool) -> Optional[list[tuple[str, Answer]]]:
    """(name, answer) for every entry that is (or --kind grid says is) a grid table; None for
    a file whose arrays are no grids, so the 1-D search takes it."""
    try:
        kinds.named("grid")
    except ValueError:
        if forced:
            raise UsageError("--kind grid: the grid kind is not available in this harness") from None
        return None
    named = [s for s in stored if POS_EMBED.search(s.name)]
    if named or forced or len(stored) == 1:
        chosen = named or list(stored)
    else:
        return None
    out = []
    for entry in chosen:
        raw = entry.read()
        if not forced and not named and not _grid_shape(tuple(getattr(raw, "shape", ()))):
            return None
        values, dtype = read_array(entry, raw)
        if not forced and not named and not _square(values[0]):
            return None
        table = matrix(values, entry.source, "a grid table")
        answer = from_table(table, entry.source, dtype)
        if not forced and not named and not answer.matched:
            return None                # an unnamed [1, n, d] that no grid rebuilds: a 1-D table
        out.append((entry.name, answer))
    return out or None


def _grid_shape(shape: tuple[int, ...]) -> bool:
    """An unnamed array is tried as a grid only when it is `[1, n, d]` and small."""
    return len(shape) == 3 and shape[0] == 1 and math.prod(shape) <= AUTO_ELEMENTS


def _square(table: np.ndarray) -> bool:
    """The rows past the leading zeros form a square grid."""
    cells = len(table) - _extra(table)
    return cells > 1 and math.isqrt(cells) ** 2 == cells


def _extra(table: np.ndarray) -> int:
    zero = np.all(table == 0, axis=1)
    return int(np.argmin(zero)) if not zero.all() else len(zero)


def from_table(table: np.ndarray, source: str, dtype: str) -> Answer:
    """The GridSpec whose reference is `table` ([extra + cells, d_model])."""
    rows, width = table.shape
    extra = _extra(table)
    cells = rows - extra
    if cells < 2:
        raise UsageError(f"a grid table needs two or more non-zero rows after its leading zero "
                         f"rows, got {cells} of {rows} ({source})")
    notes = [f"{extra} leading zero row(s): extra (cls / register) tokens"] if extra else []
    nearest: list = []
    grids = factorizations(cells, 2)[:MAX_GRIDS]
    for ndim in (2, 3):
        for grid in grids:
            answer = decide("grid", source, table.shape, dtype, _specs(grid, width, extra, dtype),
                            lambda spec, note: check(spec, table, note), notes)
            if answer.matched:
                return answer
            nearest += answer.nearest
        grids = factorizations(cells, 3)[:MAX_GRIDS]
    nearest.sort(key=lambda c: (c.err_ratio, c.max_abs_err))
    tried = "; ".join("x".join(map(str, g)) for g in factorizations(cells, 2)[:MAX_GRIDS])
    return Answer("grid", source, table.shape, dtype, None, nearest=tuple(nearest[:5]),
                  notes=tuple(notes) + (f"{cells} cells tried as the grids {tried} and 3-D ones",))


def factorizations(cells: int, ndim: int) -> list[tuple[int, ...]]:
    """Every way to write `cells` as an ndim-axis grid (axes >= 2), nearest a cube first."""
    found = [g for g in _products(cells, ndim) if all(a >= 2 for a in g)]
    return sorted(found, key=lambda g: (max(g) / min(g), g))


def _products(cells: int, ndim: int) -> Iterator[tuple[int, ...]]:
    if ndim == 1:
        yield (cells,)
        return
    for a in range(1, cells + 1):
        if cells % a == 0:
            for rest in _products(cells // a, ndim - 1):
                yield (a, *rest)


def _specs(grid: tuple[int, ...], width: int, extra: int,
           dtype: str) -> Iterator[tuple[object, str]]:
    """The named conventions for this many axes, then every axis order, layout and sin/cos
    order with index coordinates (and the 3-D splits)."""
    kind = kinds.named("grid")
    spec_type = kind.spec_type
    for name, fields in kind.conventions.items():
        fields = {k: v for k, v in fields.items() if k != "extra"}
        spec = _make(spec_type, grid, width, extra, dtype, fields)
        if spec is not None:
            yield spec, f"the {name!r} convention"
    from harness.core.kinds.grid import LAYOUTS

    splits = [None] if len(grid) == 2 else SPLITS_3D
    for order, layout, cos_first, split in itertools.product(
            itertools.permutations(range(len(grid))), LAYOUTS, (False, True), splits):
        fields = dict(axis_order=order, layout=layout, cos_first=cos_first, split=split)
        spec = _make(spec_type, grid, width, extra, dtype, fields)
        if spec is not None:
            yield spec, ""
    for base_size, scale in itertools.product(DIFFUSERS_BASE_SIZES, (1.0, 2.0)):
        fields = dict(axis_order=(1, 0), base_size=base_size, interpolation_scale=scale)
        spec = _make(spec_type, grid, width, extra, dtype, fields)
        if spec is not None:
            yield spec, "diffusers' positions i / (grid / base_size) / interpolation_scale"


def _make(spec_type: type, grid: tuple[int, ...], width: int, extra: int, dtype: str,
          fields: dict) -> Optional[object]:
    """The spec, or None when its fields do not fit this grid (another axis count, a width the
    split cannot divide)."""
    try:
        return spec_type(grid=grid, d_model=width, extra=extra, dtype=dtype, **fields)
    except ValueError:
        return None
