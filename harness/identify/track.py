"""The angle of every sin/cos pair along the rows: its slope (frequency) and its phase at row 0.

For a true pair, `atan2(sin, cos)` is the angle modulo 2 pi. On a block of
consecutive rows it is unwrapped and fitted by a line; the line then predicts
the angle at rows twice as far, which unwraps those too, and so on to the
last row. The slope ends up as precise as the whole table allows while only
a few hundred rows are ever read - which keeps `identify` fast on big tables.
A pair turning faster than pi per row is seen aliased; the frequency law
(law.py) is fitted on the slower pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

BLOCK_ROWS = 128
ROWS_PER_HOP = 8
TWO_PI = 2.0 * np.pi


@dataclass(frozen=True)
class Track:
    """Per pair: angle(row) ~ slope * row + phase."""

    slope: np.ndarray        # rad per row; aliased into (-pi, pi] for pairs faster than that
    phase: np.ndarray        # angle at row 0, in [0, 2 pi)
    slope_err: np.ndarray    # one standard deviation, from the fit residuals
    phase_err: np.ndarray
    rows: np.ndarray         # the rows that were read


def longest_run(valid: np.ndarray) -> np.ndarray:
    """Row indices of the longest run of consecutive valid rows."""
    idx = np.flatnonzero(valid)
    if not len(idx):
        return idx
    breaks = np.flatnonzero(np.diff(idx) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks + 1, [len(idx)]])
    best = int(np.argmax(ends - starts))
    return idx[starts[best]:ends[best]]


def track(values: np.ndarray, sin_cols: np.ndarray, cos_cols: np.ndarray, valid: np.ndarray,
          angle_noise: float) -> Optional[Track]:
    """Fit every pair's line; None when fewer than 2 consecutive rows are usable."""
    block = longest_run(valid)[:BLOCK_ROWS]
    if len(block) < 2:
        return None
    rows = block.astype(np.float64)
    theta = np.unwrap(_angles(values, block, sin_cols, cos_cols), axis=0)
    weight = np.ones_like(theta)
    fit = _line(rows, theta, weight, angle_noise)
    reach = block[-1]
    last = values.shape[0] - 1
    while reach < last:
        reach = min(last, block[0] + 2 * (reach - block[0]) + 1)
        hop = np.arange(max(reach - ROWS_PER_HOP + 1, 0), reach + 1)
        hop = hop[valid[hop]]
        if not len(hop):
            continue
        measured = _angles(values, hop, sin_cols, cos_cols)
        predicted = fit.slope[None, :] * hop[:, None] + fit.phase[None, :]
        turns = np.round((predicted - measured) / TWO_PI)
        doubt = fit.slope_err[None, :] * np.abs(hop[:, None] - rows.mean()) + fit.phase_err[None, :]
        rows = np.concatenate([rows, hop.astype(np.float64)])
        theta = np.concatenate([theta, measured + TWO_PI * turns])
        weight = np.concatenate([weight, (doubt < 0.5).astype(np.float64)])
        fit = _line(rows, theta, weight, angle_noise)
    return Track(fit.slope, np.mod(fit.phase, TWO_PI), fit.slope_err, fit.phase_err,
                 rows.astype(np.int64))


def _angles(values: np.ndarray, rows: np.ndarray, sin_cols: np.ndarray,
            cos_cols: np.ndarray) -> np.ndarray:
    sub = np.asarray(values[rows], dtype=np.float64)     # float64 angles of a float16/32 table
    return np.arctan2(sub[:, sin_cols], sub[:, cos_cols])


@dataclass(frozen=True)
class _Fit:
    slope: np.ndarray
    phase: np.ndarray
    slope_err: np.ndarray
    phase_err: np.ndarray


def _line(rows: np.ndarray, theta: np.ndarray, weight: np.ndarray, floor: float) -> _Fit:
    """Weighted least squares theta = slope * row + phase, column by column."""
    n = weight.sum(axis=0)
    mean_p = (weight * rows[:, None]).sum(axis=0) / n
    mean_t = (weight * theta).sum(axis=0) / n
    dp = rows[:, None] - mean_p[None, :]
    sxx = (weight * dp * dp).sum(axis=0)
    slope = (weight * dp * (theta - mean_t[None, :])).sum(axis=0) / sxx
    phase = mean_t - slope * mean_p
    resid = theta - (slope[None, :] * rows[:, None] + phase[None, :])
    sigma = np.sqrt((weight * resid * resid).sum(axis=0) / np.maximum(n - 2, 1))
    sigma = np.maximum(sigma, floor)
    return _Fit(slope, phase, sigma / np.sqrt(sxx), sigma * np.sqrt(1.0 / n + mean_p ** 2 / sxx))
