"""The float64 reference table, and the column plan the core reads conventions from.

The reference is deliberately plain: angles in float64, one `sin` and one
`cos` from NumPy (correctly range-reduced), and an explicit column plan that
says, for every output column, which function of which frequency it holds.
The tolerance and identify read the plan too; implementations do not (each
places its own columns, so a mistake here cannot hide in them). The plan, the
frequencies and the table are tested against tests/oracle.py, which shares no
code with this module, at 50 digits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.kinds.table.spec import Spec


@dataclass(frozen=True)
class ColumnPlan:
    """Where each function of each frequency lands in the output.

    `first_cols[i]` holds the first function (sin, or cos if `cos_first`) of
    frequency `first_freq[i]`; likewise for the second; `zero_cols` are padding.
    """

    first_cols: np.ndarray
    first_freq: np.ndarray
    second_cols: np.ndarray
    second_freq: np.ndarray
    zero_cols: np.ndarray


def column_plan(spec: Spec) -> ColumnPlan:
    d = spec.d_model
    n_first, n_second = spec.n_freq, d // 2
    pad = [d - 1] if (spec.odd == "pad" and d % 2) else []
    if spec.layout == "interleaved":
        first_cols = np.arange(n_first) * 2
        second_cols = np.arange(n_second) * 2 + 1
    else:
        first_cols = np.arange(n_first)
        second_cols = n_first + np.arange(n_second)
    return ColumnPlan(first_cols, np.arange(n_first), second_cols, np.arange(n_second),
                      np.array(pad, dtype=np.int64))


def inv_freq(spec: Spec) -> np.ndarray:
    """float64 inverse frequencies, `base ** (-k / denominator)`."""
    k = np.arange(spec.n_freq, dtype=np.float64)
    return np.power(spec.base, -k / spec.denominator)


def positions(spec: Spec) -> np.ndarray:
    return np.arange(spec.offset, spec.offset + spec.length, dtype=np.float64)


def angles(spec: Spec) -> np.ndarray:
    """float64 angles, shape [length, n_freq]."""
    return (spec.scale * positions(spec))[:, None] * inv_freq(spec)[None, :]


def reference(spec: Spec) -> np.ndarray:
    """The float64 table `[length, d_model]` that every implementation is judged by."""
    theta = angles(spec)
    first, second = (np.cos, np.sin) if spec.cos_first else (np.sin, np.cos)
    plan = column_plan(spec)
    out = np.zeros((spec.length, spec.d_model), dtype=np.float64)
    out[:, plan.first_cols] = first(theta[:, plan.first_freq])
    out[:, plan.second_cols] = second(theta[:, plan.second_freq])
    return out
