"""The first position of a table, from the phases of its pairs at row 0.

Pair k starts at angle `omega_k * offset` (mod 2 pi). One pair pins the offset
only modulo its period 2 pi / omega_k; the pairs together pin it absolutely,
because their periods are incommensurate. The search keeps a set of intervals
that can still hold the offset, starts from the slowest pair (the longest
period, the coarsest cut) and narrows the set with every faster pair, until
each interval holds at most one integer. Offsets up to `WINDINGS` periods of
the slowest pair are searched (over 4e9 positions for base 10000 at d_model 64);
when several remain (a float16 table pins phases loosely), the best-fitting win.
"""

from __future__ import annotations

from typing import Union

import numpy as np

Real = Union[float, np.ndarray]

WINDINGS = 100_000
MAX_INTERVALS = 2_000_000
MAX_SOLUTIONS = 16           # integers kept per decade before ranking them by fit
TWO_PI = 2.0 * np.pi


def find_offsets(omega: np.ndarray, phase: np.ndarray, phase_err: np.ndarray, eps: float,
                 limit: int, rows: int, keep: int = 3) -> list[int]:
    """Integers 0 <= offset <= limit with omega * offset == phase (mod 2 pi) for every pair.

    `rows`: how far the phases were extrapolated from (the table's length): the table's own
    rounding, which grows with the angle, reaches the fitted phase from that far. Decades
    are searched in turn (small offsets are the common case, and the rounding allowance
    stays tight there): the first that holds solutions and the next one; the solutions
    that fit the phases best come first.
    """
    order = np.argsort(omega)
    if omega[order[0]] <= 0:
        return []
    limit = int(min(limit, WINDINGS * TWO_PI / omega[order[0]]))
    edges = [0.0, *[10.0 ** e for e in range(1, 17) if 10.0 ** e < limit], float(limit)]
    found: list[int] = []
    first_hit = None
    for decade, (lo_edge, hi_edge) in enumerate(zip(edges[:-1], edges[1:])):
        if first_hit is not None and decade > first_hit + 1:
            break
        lo, hi = np.array([lo_edge]), np.array([hi_edge])
        for k in order:
            lo, hi = _cut(lo, hi, omega[k], phase[k], phase_err[k], eps, rows)
            if not len(lo):
                break
        for i in np.argsort(lo)[:MAX_SOLUTIONS]:
            found += range(int(np.ceil(lo[i])), int(np.floor(hi[i])) + 1)[:MAX_SOLUTIONS]
        if found and first_hit is None:
            first_hit = decade
    misfit = [_misfit(off, omega, phase, phase_err, eps, rows) for off in found]
    return [off for _, off in sorted(zip(misfit, found))][:keep]


def _misfit(offset: int, omega: np.ndarray, phase: np.ndarray, phase_err: np.ndarray,
            eps: float, rows: int) -> float:
    """Worst phase residual of an offset, in units of its tolerance."""
    residual = np.abs(np.mod(omega * offset - phase + np.pi, TWO_PI) - np.pi)
    return float(np.max(residual / _phase_tol(omega, offset + rows, phase_err, eps)))


def _cut(lo: np.ndarray, hi: np.ndarray, w: float, phase: float, phase_err: float,
         eps: float, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the parts of the intervals where omega * offset is within tolerance of the phase."""
    half = _phase_tol(w, hi + rows, phase_err, eps) / w
    sharp = 2 * half < TWO_PI / w          # this pair can tell offsets apart here
    first = np.ceil((lo * w - phase) / TWO_PI - half * w / TWO_PI)
    last = np.floor((hi * w - phase) / TWO_PI + half * w / TWO_PI)
    count = np.where(sharp, np.maximum(last - first + 1, 0), 0).astype(np.int64)
    if count.sum() > MAX_INTERVALS:
        return lo, hi                      # too coarse to cut yet; a faster pair will
    owner = np.repeat(np.arange(len(lo)), count)
    turn = first[owner] + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    center = (phase + TWO_PI * turn) / w
    new_lo = np.concatenate([lo[~sharp], np.maximum(lo[owner], center - half[owner])])
    new_hi = np.concatenate([hi[~sharp], np.minimum(hi[owner], center + half[owner])])
    alive = np.ceil(new_lo) <= np.floor(new_hi)
    return new_lo[alive], new_hi[alive]


def _phase_tol(w: Real, position: Real, phase_err: Real, eps: float) -> Real:
    """How far a phase may honestly be off: fit noise plus the table's rounding at `position`
    (the tolerance model of harness.core.kinds.table.tolerance, doubled)."""
    return 6.0 * phase_err + 2.0 * eps * (4.0 + w * position * (4.0 + np.abs(np.log(w))))
