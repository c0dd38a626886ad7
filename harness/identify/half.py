"""Was this table built in half precision? A table that matches no Spec at the angle contract may
still be a Spec's table built the way libraries keep shipping it: positions and angles held in
float16 or bfloat16 (keras-hub's float16 layer, `torch.arange(L, dtype=torch.bfloat16)`). That is
worth naming: the convention is right, the precision is not, and verify fails such a table.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.core.contract import C_VALUE, eps
from harness.core.kinds.rotary.apply import round_to_bfloat16
from harness.core.kinds.table.reference import column_plan, inv_freq
from harness.core.kinds.table.spec import Spec
from harness.identify.check import Candidate

HALF = ("float16", "bfloat16")


def held(x: np.ndarray, dtype: str) -> np.ndarray:
    """x rounded to a half dtype, carried as float32 (NumPy has no bfloat16)."""
    x = np.asarray(x, dtype=np.float32)
    return round_to_bfloat16(x) if dtype == "bfloat16" else x.astype(np.float16).astype(np.float32)


def half_built(spec: Spec, dtype: str) -> np.ndarray:
    """`spec`'s table with its positions, frequencies, angles and values each held in `dtype`."""
    pos = held(np.arange(spec.offset, spec.offset + spec.length, dtype=np.float64) * spec.scale, dtype)
    theta = held(pos[:, None] * held(inv_freq(spec), dtype)[None, :], dtype)
    plan = column_plan(spec)
    first, second = (np.cos, np.sin) if spec.cos_first else (np.sin, np.cos)
    out = np.zeros((spec.length, spec.d_model), dtype=np.float64)
    out[:, plan.first_cols] = held(first(theta[:, plan.first_freq]), dtype)
    out[:, plan.second_cols] = held(second(theta[:, plan.second_freq]), dtype)
    return out


def half_note(values: np.ndarray, stored: str, nearest: Sequence[Candidate]) -> Optional[str]:
    """A note naming the nearest candidate this table is, built in its half dtype; None if none."""
    if stored not in HALF:
        return None
    for candidate in nearest:
        spec = candidate.spec
        if values.shape != (spec.length, spec.d_model):
            continue
        err = float(np.max(np.abs(np.asarray(values, dtype=np.float64) - half_built(spec, stored))))
        if err <= C_VALUE * eps(stored):
            return (f"built in half precision: this is {spec.short()} with its positions and angles "
                    f"held in {stored} (within {err:.2g} of that build, {candidate.max_abs_err:.3g} "
                    "from the table the angle contract allows): the convention is right, the "
                    "precision is not, and verify fails such a table")
    return None
