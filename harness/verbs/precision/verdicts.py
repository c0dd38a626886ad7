"""One line per method saying whether to use it, and which method to use per dtype.

The rule is verify's angle contract (harness/core/contract.py), so a verdict is the measurement
judged as verify judges it: at a probe of position (or t, or grid side) p a method is *exact*
when its error is within the exact bound there (GOOD_ULPS ulps of 1.0 in the stored dtype plus
float64's angle error at p), and *wrong* past the float32 bound (GOOD_ULPS ulps plus the error
of an angle p formed in float32, at most an eighth of a radian): a position, angle or timestep
held in a half dtype is wrong, float32 angles far out are limited, not wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

import numpy as np

from harness.core import contract
from harness.core.contract import eps

GOOD_ULPS = int(contract.C_VALUE)
#: errors this close (relatively) to the smallest are named as equally good
TIE = 0.05


@dataclass(frozen=True)
class Axis:
    """What a study's probes are called: `name` of a probe starting at v, covering v .. v + span."""

    name: str            # "position", "t", "grid side"
    span: float = 0.0

    def at(self, value: float) -> str:
        return f"{self.name} {value:,.6g}" if value % 1 else f"{self.name} {int(value):,}"

    def upto(self, value: float) -> str:
        return self.at(value + self.span)


@dataclass(frozen=True)
class Verdict:
    source: str
    dtype: str
    word: str            # "use", "limited", "wrong"
    worst: float
    line: str


def _err(value: float) -> str:
    return "Inf/NaN" if value != value or value == float("inf") else f"{value:.2g}"


def verdict(part: pd.DataFrame, axis: Axis) -> Verdict:
    """The verdict of one source's probes."""
    part = part.sort_values("position")
    source, dtype = part.source.iloc[0], part.dtype.iloc[0]
    err = part.max_abs_err.astype(float).fillna(float("inf")).to_numpy()
    pos = part.position.to_numpy()
    reach = np.abs(pos.astype(float)) + axis.span       # the largest angle a probe covers, ~p rad
    good = err <= bound(dtype, reach, "exact")
    beyond = err > bound(dtype, reach, "float32")
    worst_at = int(err.argmax())
    worst = float(err[worst_at])
    head = f"`{source.removesuffix(' ' + dtype)}` ({dtype})"
    if good.all():
        line = (f"**use** {head}: max error {_err(worst)} ({worst / eps(dtype):.2g} ulps) "
                f"out to {axis.upto(pos[-1])}.")
        return Verdict(source, dtype, "use", worst, line)
    first_bad = int((~good).argmax())
    kept = (f"exact to {axis.upto(pos[first_bad - 1])}" if first_bad else "never exact")
    if beyond.any():
        at = int(beyond.argmax())
        limit = float(bound(dtype, reach[at:at + 1], "float32")[0])
        line = (f"**avoid** {head} from {axis.at(pos[at])}: error {_err(err[at])} there (> the "
                f"float32 contract's {limit:.2g}), max {_err(worst)} at {axis.at(pos[worst_at])}; "
                f"{kept}.")
        return Verdict(source, dtype, "wrong", worst, line)
    line = (f"limited {head}: {kept}, then up to {_err(worst)} at {axis.at(pos[worst_at])} "
            "(within the float32 contract: its error grows with the angle).")
    return Verdict(source, dtype, "limited", worst, line)


def bound(dtype: str, reach: np.ndarray, grade: str) -> np.ndarray:
    """verify's bound at angles up to `reach` (frequency 1, the fastest), of the `grade` contract."""
    return contract.angle_bound(dtype, reach, np.full(np.shape(reach), contract.C_ANGLE), grade)


def verdicts(df: pd.DataFrame, axis: Axis) -> list[Verdict]:
    return [verdict(part, axis) for _, part in df.groupby("source", sort=False)]


def choices(found: list[Verdict], by: str = "dtype") -> list[str]:
    """Per stored dtype (or per rope_type, `by="config"`: the source's first word), the methods
    good everywhere with the smallest error, ties within TIE of the best named together; where
    none is good everywhere, the least bad."""
    def key(v: Verdict) -> str:
        return v.source.split(" ")[0] if by == "config" else v.dtype

    lines = []
    for group in dict.fromkeys(key(v) for v in found):
        mine = [v for v in found if key(v) == group]
        usable = [v for v in mine if v.word == "use"] or mine
        least = min(v.worst for v in usable)
        best = [v for v in usable if v.worst <= least * (1 + TIE)]
        names = ", ".join(f"`{_label(v).removeprefix(group + ' ')}`" for v in best)
        note = "" if best[0].word == "use" else " (none is exact everywhere: the least bad)"
        lines.append(f"{group}: {names}{note}")
    return lines


def _label(v: Verdict) -> str:
    return v.source.removesuffix(" " + v.dtype)
