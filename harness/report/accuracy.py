"""What verify.csv says about an implementation: may it be recommended, how accurate is it far out.

Only an implementation that verify checked and never found wrong can be
recommended: speed is worthless on a wrong table. Accuracy is quoted where it
is worst, at long positions (float32 angles lose ~p * 6e-8 there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import pandas as pd

from harness.core.kinds.table.cases import LONG_POSITIONS
from harness.report import fmt
from harness.runs.verdicts import rows_of


@dataclass(frozen=True)
class Accuracy:
    """Worst |impl - reference| over verify cases reaching `LONG_POSITIONS` (else the farthest)."""

    max_abs_err: float
    position: int

    def __str__(self) -> str:
        if self.position <= 0:          # no positions to quote (a timestep embedding)
            return fmt.err(self.max_abs_err)
        return f"{fmt.err(self.max_abs_err)} (p <= {fmt.count(self.position)})"


def long_accuracy(verify: Optional[pd.DataFrame], impl: str, dtype: str) -> Optional[Accuracy]:
    """The worst error of `impl` in `dtype` at long positions, None when verify never ran it."""
    if verify is None:
        return None
    mine = rows_of(verify, impl)
    rows = mine[(mine["dtype"] == dtype) & mine["max_abs_err"].map(math.isfinite)]
    if rows.empty:
        return None
    far = rows[rows["max_position"] >= LONG_POSITIONS]
    if far.empty:
        far = rows[rows["max_position"] == rows["max_position"].max()]
    return Accuracy(float(far["max_abs_err"].max()), int(far["max_position"].max()))


def error_by_position(verify: Optional[pd.DataFrame], dtype: str = "float32") -> pd.DataFrame:
    """Worst error per implementation and largest position, over the `dtype` cases that ran.

    Cases with `scale` != 1 are left out: their angles, which the error follows, are not
    their positions.
    """
    columns = ["impl", "max_position", "max_abs_err"]
    if verify is None:
        return pd.DataFrame(columns=columns)
    unscaled = verify["scale"] == 1.0 if "scale" in verify.columns else True
    rows = verify[(verify["dtype"] == dtype) & verify["max_abs_err"].map(math.isfinite) & unscaled]
    worst = rows.groupby(["impl", "max_position"], as_index=False)["max_abs_err"].max()
    return worst[columns].sort_values(["impl", "max_position"]).reset_index(drop=True)
