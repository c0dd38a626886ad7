"""Which column holds which function of which frequency: the Spec layouts and permutations of them.

A sinusoidal table is made of sin/cos pairs of one angle, so `sin^2 + cos^2 = 1`
row by row. That is checked for each of the Spec's column plans (layout x
cos_first x odd policy) before any frequency is fitted; a table that fits no
plan may still be a column permutation of one, which `pair_columns` finds
without assuming a plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.kinds.table.reference import column_plan
from harness.core.kinds.table.spec import LAYOUTS, Spec

SIN, COS, ZERO = "sin", "cos", "zero"


@dataclass(frozen=True)
class Plan:
    """A column plan: sin_cols[k] / cos_cols[k] hold the functions of frequency k."""

    layout: str
    cos_first: bool
    odd: str
    sin_cols: np.ndarray
    cos_cols: np.ndarray
    zero_cols: np.ndarray

    @property
    def n_pairs(self) -> int:
        return min(len(self.sin_cols), len(self.cos_cols))

    @property
    def width(self) -> int:
        return len(self.sin_cols) + len(self.cos_cols) + len(self.zero_cols)

    @property
    def half_width(self) -> float:
        return self.width / 2 if self.odd == "extend" else self.width // 2

    def identity(self) -> list[tuple[str, int]]:
        """(function, frequency) of every column, in column order."""
        out: list[tuple[str, int]] = [(ZERO, -1)] * self.width
        for func, cols in ((SIN, self.sin_cols), (COS, self.cos_cols)):
            for k, col in enumerate(cols):
                out[int(col)] = (func, k)
        return out


def spec_plan(d_model: int, layout: str, cos_first: bool, odd: str) -> Plan:
    """The Spec's own column plan (harness.core.kinds.table.reference), read as sin/cos columns."""
    plan = column_plan(Spec(1, d_model, layout=layout, cos_first=cos_first, odd=odd))
    first, second = plan.first_cols, plan.second_cols
    sin_cols, cos_cols = (second, first) if cos_first else (first, second)
    return Plan(layout, cos_first, odd, sin_cols, cos_cols, plan.zero_cols)


def spec_plans(d_model: int) -> list[Plan]:
    """Every plan a Spec can have at this width; for d_model = 2 the layouts coincide."""
    odds = ("pad", "extend") if d_model % 2 else ("error",)
    layouts = LAYOUTS[:1] if d_model == 2 else LAYOUTS
    return [spec_plan(d_model, layout, cos_first, odd)
            for odd in odds for layout in layouts for cos_first in (False, True)]


def pair_residual(values: np.ndarray, sin_cols: np.ndarray, cos_cols: np.ndarray) -> np.ndarray:
    """Per pair, max over rows of |sin^2 + cos^2 - 1| (0 for a true pair, up to rounding)."""
    n = min(len(sin_cols), len(cos_cols))
    s, c = values[:, sin_cols[:n]], values[:, cos_cols[:n]]
    return np.max(np.abs(s * s + c * c - 1.0), axis=0) if n else np.zeros(0)


def plan_residual(values: np.ndarray, plan: Plan) -> float:
    """How badly the table breaks the plan: pairs off the unit circle, padding not zero,
    extra columns outside [-1, 1]. Rounding noise for the right plan, O(1) for a wrong one."""
    n = plan.n_pairs
    worst = float(pair_residual(values, plan.sin_cols, plan.cos_cols).max()) if n else 0.0
    if len(plan.zero_cols):
        worst = max(worst, float(np.abs(values[:, plan.zero_cols]).max()))
    extra = np.concatenate([plan.sin_cols[n:], plan.cos_cols[n:]]).astype(np.int64)
    if len(extra):
        worst = max(worst, float(np.abs(values[:, extra]).max()) - 1.0)
    return worst


# -- permutations -------------------------------------------------------------------

@dataclass(frozen=True)
class Pairing:
    """Columns paired by sin^2 + cos^2 = 1 without assuming a layout."""

    first: np.ndarray     # column of one member of each pair
    second: np.ndarray    # its partner
    singles: np.ndarray   # columns with no partner (an 'extend' column)
    zeros: np.ndarray     # all-zero columns (a 'pad' column)


def pair_columns(values: np.ndarray, noise: float) -> Pairing:
    """Greedy best partners under max |a^2 + b^2 - 1| <= noise; the rest are singles."""
    d = values.shape[1]
    zeros = np.flatnonzero(np.abs(values).max(axis=0) <= noise)
    live = np.setdiff1d(np.arange(d), zeros)
    sq = values[:, live] ** 2
    worst = np.zeros((len(live), len(live)))
    for row in sq:
        np.maximum(worst, np.abs(row[:, None] + row[None, :] - 1.0), out=worst)
    i, j = np.nonzero(np.triu(worst <= noise, k=1))
    taken = np.zeros(len(live), dtype=bool)
    first, second = [], []
    for a, b in sorted(zip(i.tolist(), j.tolist()), key=lambda ab: worst[ab]):
        if not taken[a] and not taken[b]:
            taken[a] = taken[b] = True
            first.append(live[a])
            second.append(live[b])
    return Pairing(np.array(first, dtype=np.int64), np.array(second, dtype=np.int64),
                   live[~taken], zeros)


def _interleave(d: int) -> np.ndarray:
    """Columns a concat->interleaved reorder takes: 0, h, 1, h+1, ..."""
    h = d // 2
    return np.stack([np.arange(h), h + np.arange(h)], axis=1).reshape(-1)


def _deinterleave(d: int) -> np.ndarray:
    """Columns an interleaved->concat reorder takes: 0, 2, 4, ..., 1, 3, 5, ..."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def named_permutations(plan: Plan) -> dict[str, np.ndarray]:
    """Known mix-ups of a table in `plan`: scrambled = table[:, index] (even widths)."""
    d = plan.width
    if d % 2:
        return {}
    h = d // 2
    # (Frequency order reversed is no permutation: it is the Spec with base 1/base.)
    names = {"the two column halves swapped": np.concatenate([np.arange(h, d), np.arange(h)])}
    if plan.layout == "interleaved":
        names["interleaved table reordered as if it were concat"] = _interleave(d)
    else:
        names["concat table reordered as if it were interleaved"] = _deinterleave(d)
    return names


def describe_permutation(spec: Spec, order: np.ndarray) -> tuple[Spec, str, tuple[int, ...]]:
    """`table[:, order]` is `spec`'s table: name how `table` scrambles the table of some layout.

    Returns the Spec whose table it scrambles, the mix-up's name, and for every
    table column the column of that Spec's table it holds.
    """
    d = spec.d_model
    canonical = spec_plan(d, spec.layout, spec.cos_first, spec.odd).identity()
    held: list[tuple[str, int]] = [(ZERO, -1)] * d
    for i, col in enumerate(order):
        held[int(col)] = canonical[i]
    plans = [p for p in spec_plans(d) if p.odd == spec.odd]
    for plan in plans:
        where = {ident: col for col, ident in enumerate(plan.identity())}
        columns = np.array([where[h] for h in held])
        for name, index in named_permutations(plan).items():
            if np.array_equal(columns, index):
                return (spec.replace(layout=plan.layout, cos_first=plan.cos_first), name,
                        tuple(int(c) for c in columns))
    where = {ident: col for col, ident in enumerate(canonical)}
    return spec, "columns permuted (no known mix-up)", tuple(int(where[h]) for h in held)
