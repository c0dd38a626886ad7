"""How tall the sinusoids are: a table saved with an amplitude is `amplitude * (a Spec's table)`.

Some tables are stored scaled: x-transformers' ScaledSinusoidalEmbedding starts its learned
scale at `dim ** -0.5`, other models keep `pe * sqrt(d_model)`. No Spec reproduces them, yet
they are a Spec's table times one number. Every sin/cos pair lies on a circle of radius
`amplitude`: it is measured on the column plan whose pairs' radii agree best, or from each
row's sum of squares (`amplitude^2 * d/2` at an even width, for any column order), whichever
agrees best. A measurement within its own precision of 1, `d_model ** -0.5`,
`sqrt(d_model)` or a round number is taken as exactly that; otherwise it is used as measured,
and the check allows for its uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from harness.identify.law import nice_values, shortest
from harness.identify.structure import Plan

NOISE_CEILING = 0.05        # radii further apart than this are no circle (as in search.py)
SIGMAS = 6.0
ROUND_DIGITS = 3


@dataclass(frozen=True)
class Amplitude:
    """table = value * Spec's table; `err` bounds how far a measured value may be off."""

    value: float = 1.0
    err: float = 0.0            # absolute, 6 sigma; 0 for an exact expression
    expression: str = "1"       # "1", "d_model ** -0.5", "sqrt(d_model)", "0.5", or "measured"
    seen: bool = False          # the values lie on circles at all (else no sinusoidal table)

    @property
    def scaled(self) -> bool:
        return self.value != 1.0


def find_amplitude(sample: np.ndarray, plans: Sequence[Plan], eps: float) -> Amplitude:
    """The amplitude of the rows in `sample` (float64, all-zero rows left out); 1 if unseen."""
    r2 = _radii_squared(sample, plans)
    if r2 is None:
        return Amplitude()
    level = float(np.mean(r2))
    value = math.sqrt(level)
    rel = float(np.std(r2)) / (2.0 * level * math.sqrt(len(r2)))     # one sigma of ln(value)
    window = SIGMAS * rel + eps
    d_model = sample.shape[1]
    exact = [("1", 1.0), ("d_model ** -0.5", d_model ** -0.5), ("sqrt(d_model)", d_model ** 0.5)]
    exact += [(f"{v:g}", v) for v in nice_values(value, window, ROUND_DIGITS)]
    for expression, amp in exact:
        if abs(math.log(amp / value)) <= window:
            return Amplitude(amp, 0.0, expression, seen=True)
    return Amplitude(shortest(value, SIGMAS * rel), (SIGMAS * rel + eps) * value, "measured",
                     seen=True)


def _radii_squared(sample: np.ndarray, plans: Sequence[Plan]) -> Optional[np.ndarray]:
    """sin^2 + cos^2 of every pair under the plan where they agree best, or per-row
    sums of squares / (d/2) at an even width; None when neither is a circle."""
    options = []
    for plan in plans:
        n = plan.n_pairs
        if n:
            s, c = sample[:, plan.sin_cols[:n]], sample[:, plan.cos_cols[:n]]
            options.append((s * s + c * c).ravel())
    if sample.shape[1] % 2 == 0:
        options.append((sample * sample).sum(axis=1) / (sample.shape[1] // 2))
    best, spread = None, math.inf
    for r2 in options:
        level = float(np.median(r2))
        if level > 0:
            worst = float(np.max(np.abs(r2 / level - 1.0)))
            if worst < spread:
                best, spread = r2, worst
    return best if spread <= NOISE_CEILING else None
