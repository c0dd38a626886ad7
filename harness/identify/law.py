"""From pair frequencies to the Spec's frequency law: scale, base and freq_shift.

Pair k turns at `omega_k = scale * base ** (-k / (half_width - freq_shift))` rad
per position: a straight line `ln omega_k = ln scale - rate * k` with
`rate = ln(base) / (half_width - freq_shift)`. The line is fitted by consensus
over pairs of pairs, so aliased fast pairs (scale > pi) and noisy slow pairs
(float16) do not pull it. Only `rate` is observable: base and freq_shift trade
against each other exactly (base 10000 with shift 0 is base 10000^(31/32) with
shift 1 at d_model = 64; Whisper's base 5000 with shift 1 is base 6581.0 with
shift 0). `candidates` lists the readings libraries use - shift 0 or 1 with a
round base, a common base with a half-integer shift - then the base as
measured; among readings that all fit, `Law.simplicity` says which one a
person most likely wrote: the fewest digits in the base, then the usual shifts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Optional

import numpy as np

from harness.identify.track import Track

ALIAS_LIMIT = 2.5            # rad per row: faster pairs may be aliased
CONSENSUS_SAMPLE = 16        # pairs of these many pairs propose lines
TWO_PI = 2.0 * math.pi
COMMON_BASES = (10000.0, 1000.0, 100000.0, 1000000.0, 500.0, 100.0, 10.0)
DEFAULT_BASE = 10000.0
MAX_SHIFT = 2.0             # diffusers-style shifts other than 0/1 are small halves
#: Pairs can look more precise than the table is (angles quantised at a huge offset): a
#: round base or scale within this relative distance of the fit is always worth a check.
RELATIVE_FLOOR = 1e-8
RANK_MEASURED = 3           # the rank of a base taken as measured (not rounded)
NICE_DIGITS = 4             # a 'round' base or scale has at most this many significant digits


@dataclass(frozen=True)
class Rate:
    """ln omega_k = log_scale - rate * k, with one-sigma errors."""

    log_scale: float
    rate: float
    log_scale_err: float
    rate_err: float


@dataclass(frozen=True)
class Law:
    """One reading of a rate: base, freq_shift, scale; lower `rank` is the likelier reading.

    A value read off the table rather than rounded carries the fit's uncertainty
    (`log_scale_err`, `rate_err`; 0 for round values): the check allows for it.
    """

    base: float
    freq_shift: float
    scale: float
    rank: int
    log_scale_err: float = 0.0
    rate_err: float = 0.0

    @property
    def measured(self) -> bool:
        return bool(self.log_scale_err or self.rate_err)

    @property
    def simplicity(self) -> tuple[bool, int, bool, bool, int, float]:
        """Sort key among readings that fit equally: round before measured, fewest significant
        digits of the base (5000 before 6581), shift 0 or 1 before others, the default base,
        a round scale, then shift 0 before 1."""
        return (self.measured, significant_digits(self.base), self.freq_shift not in (0, 1),
                self.base != DEFAULT_BASE, significant_digits(self.scale), abs(self.freq_shift))

    def omega(self, half_width: float, n_freq: int) -> np.ndarray:
        """Exact angular frequency of each pair, rad per position (as in harness.core.kinds.table.reference)."""
        k = np.arange(n_freq, dtype=np.float64)
        return self.scale * np.power(self.base, -k / (half_width - self.freq_shift))


def fit_rate(tr: Track, eps: float) -> Optional[Rate]:
    """The line most well-measured pairs agree with; None when fewer than 2 pairs qualify.

    First a consensus over the slow pairs (which cannot be aliased), then every
    pair de-aliased against that line (slope + 2 pi m) and the line refitted:
    the fast pairs carry most of the precision of the scale.
    """
    w = tr.slope
    rel = np.where(w > 0, tr.slope_err / np.where(w > 0, w, 1.0), np.inf)
    usable = np.flatnonzero((w > 0) & (w < ALIAS_LIMIT) & (rel < 0.05))
    if len(usable) < 2:
        return None
    k = usable.astype(np.float64)
    y = np.log(w[usable])
    sigma = rel[usable] + 4.0 * eps * (4.0 + np.abs(y))
    pick = usable[np.unique(np.linspace(0, len(usable) - 1, CONSENSUS_SAMPLE).astype(int))]
    best: Optional[np.ndarray] = None
    for i, j in combinations(pick.tolist(), 2):
        rate = -(math.log(w[j]) - math.log(w[i])) / (j - i)
        inliers = np.abs(y - (math.log(w[i]) + rate * i - rate * k)) <= 6.0 * sigma
        if best is None or inliers.sum() > best.sum():
            best = inliers
    assert best is not None
    if best.sum() < 2:
        return None
    line = _weighted_line(k[best], y[best], sigma[best])
    for _ in range(2):
        line = _dealiased(line, tr, eps) or line
    return line


def _dealiased(line: Rate, tr: Track, eps: float) -> Optional[Rate]:
    """Refit on every pair whose alias (slope + 2 pi m) the line predicts without doubt."""
    k = np.arange(len(tr.slope), dtype=np.float64)
    predicted = line.log_scale - line.rate * k
    doubt = np.exp(predicted) * (line.log_scale_err + k * line.rate_err)
    turns = np.round((np.exp(predicted) - tr.slope) / TWO_PI)
    w = tr.slope + TWO_PI * turns
    ok = (doubt < 1.0) & (w > 0)
    y = np.log(np.where(ok, w, 1.0))
    sigma = tr.slope_err / np.where(ok, w, 1.0) + 4.0 * eps * (4.0 + np.abs(y))
    inliers = ok & (np.abs(y - predicted) <= 6.0 * sigma + 3.0 * doubt / np.exp(predicted))
    return _weighted_line(k[inliers], y[inliers], sigma[inliers]) if inliers.sum() >= 2 else None


def _weighted_line(k: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> Rate:
    wt = 1.0 / sigma ** 2
    design = np.stack([np.ones_like(k), -k], axis=1)
    normal = design.T @ (design * wt[:, None])
    cov = np.linalg.inv(normal)
    coef = cov @ (design.T @ (wt * y))
    resid = y - design @ coef
    chi2 = float((wt * resid ** 2).sum()) / max(len(k) - 2, 1)
    cov = cov * max(chi2, 1.0)
    return Rate(float(coef[0]), float(coef[1]), math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1]))


def nice_values(x: float, log_tol: float, max_digits: int = NICE_DIGITS) -> list[float]:
    """Round numbers within `log_tol` (in ln) of x, fewest significant digits first."""
    if not (x > 0 and math.isfinite(x)):
        return []
    out: list[float] = []
    for digits in range(1, max_digits + 1):
        exponent = math.floor(math.log10(x)) - digits + 1
        value = round(x / 10.0 ** exponent) * 10.0 ** exponent
        value = float(f"{value:.{digits}g}")
        if abs(math.log(value / x)) <= log_tol and value not in out:
            out.append(value)
    return out


def significant_digits(x: float) -> int:
    """Digits needed to write x exactly as it is (10000 -> 1, 6581 -> 4, 0.125 -> 3)."""
    return next((n for n in range(1, 17) if float(f"{x:.{n}g}") == x), 17)


def candidates(rate: Optional[Rate], half_width: float, n_freq: int) -> list[Law]:
    """Readings of the fitted rate, likeliest first (rank: round, common, measured)."""
    scales = _scales(rate)
    if rate is None or n_freq < 2:       # nothing to read base and shift from: the defaults
        shifts = (0, 1) if n_freq >= 2 else (0,)     # one frequency: every shift is one table
        return [Law(DEFAULT_BASE, shift, s, r + shift) for shift in shifts for s, r in scales
                if half_width > shift]
    laws = [Law(b, f, s, rank + srank, rate.log_scale_err if srank else 0.0,
                rate.rate_err if rank == RANK_MEASURED else 0.0)
            for b, f, rank in _base_shifts(rate, half_width) for s, srank in scales]
    return sorted(laws, key=lambda law: law.rank)


def shortest(x: float, log_tol: float) -> float:
    """x with as few digits as its precision allows (what the data says, but readable)."""
    return next(iter(nice_values(x, log_tol, max_digits=17)), x)


def _scales(rate: Optional[Rate]) -> list[tuple[float, int]]:
    """(scale, rank): round values first, then the measured one at a few precisions."""
    if rate is None:
        return [(1.0, 0)]
    raw = math.exp(rate.log_scale)
    nice = nice_values(raw, 8.0 * rate.log_scale_err + RELATIVE_FLOOR)
    return [(s, 0) for s in nice] + [(s, 1) for s in _readable(raw, rate.log_scale_err)
                                     if s not in nice]


def _readable(raw: float, log_err: float) -> list[float]:
    """The measured value at a few precisions, shortest first (the check picks the best fit)."""
    out = [shortest(raw, sigmas * log_err) for sigmas in (8.0, 3.0, 1.0)] + [raw]
    return list(dict.fromkeys(out))


def _base_shifts(rate: Rate, half_width: float) -> list[tuple[float, float, int]]:
    """(base, freq_shift, rank): shift 0/1 with a round base, a common base with a round
    shift, then shift 0/1 with the base as measured."""
    r, tol = rate.rate, 8.0 * rate.rate_err + RELATIVE_FLOOR * abs(rate.rate)
    if r == 0.0:
        return []
    out: list[tuple[float, float, int]] = []
    for shift in (0, 1):
        denom = half_width - shift
        if denom <= 0:
            continue
        for base in nice_values(math.exp(r * denom), denom * tol):
            if base != 1.0:
                out.append((base, shift, 0 if base == DEFAULT_BASE else 1))
    for base in COMMON_BASES:
        shift = half_width - math.log(base) / r
        snapped = round(shift * 2) / 2
        err = math.log(base) / r ** 2 * tol
        plausible = abs(snapped) <= MAX_SHIFT and snapped not in (0, 1) and half_width > snapped
        if plausible and abs(snapped - shift) <= err:
            out.append((base, snapped, 2))
    for shift in (0, 1):
        denom = half_width - shift
        raw = math.exp(r * denom) if denom > 0 else 1.0
        if raw != 1.0:
            out += [(base, shift, RANK_MEASURED) for base in _readable(raw, denom * rate.rate_err)]
    return out
