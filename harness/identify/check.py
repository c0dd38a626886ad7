"""How far a candidate Spec's table is from the one given: max error and error / tolerance.

The candidate's table is rebuilt a chunk of rows at a time, never whole, so checking a 1.6 GB
table costs a few MiB of memory. Within a chunk, column j is `amplitude * sin` (or `cos`) of
`theta_j(first row) + phi_j(r)`, by angle addition from the float64 angles of the chunk's
first row and of the row steps r = 0 .. R-1: one sin and cos per column and chunk instead of
one per element (float64 `sin` is ~20 ns an element, the two multiply-adds under 1 ns). Its
error is a few float64 ulps, like the reference's own.

The tolerance is harness.core.kinds.table.tolerance at the table's precision, by the contract that precision
can meet (harness/core/contract.py): `exact` for float64 values, `float32` (angles as if formed
in float32, never in the table's half dtype) for the rest. That model is linear in
|position| for every column, so it is read off two positions and extended to each chunk; to
it come the noise seen in the table and what a measured base, scale or amplitude may be off by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from harness.core.kinds.table.reference import column_plan, inv_freq
from harness.core.kinds.table.spec import Spec
from harness.core.kinds.table.tolerance import C_VALUE, eps, tolerance
from harness.identify.amplitude import Amplitude
from harness.identify.law import Law

CHUNK_ELEMENTS = 1 << 18    # per temporary: 2 MiB of float64
CHECK_ROWS = 32             # rows at each end checked before the whole table
#: A tolerance this wide accepts anything: when it covers most of a candidate's table (a
#: float32 table at offset 1e10), agreeing proves nothing and the candidate cannot match.
VACUOUS = 0.5
MEDIAN_ROWS = 65            # rows the median tolerance is taken on


@dataclass(frozen=True)
class Context:
    """What every check of one table shares: its precision, noise and amplitude."""

    dtype: str          # the output dtype of candidate Specs
    precision: str      # the dtype whose eps sets the tolerance
    noise: float        # rounding seen in the table itself (|sin^2 + cos^2 - 1|)
    amplitude: Amplitude = Amplitude()

    @property
    def eps(self) -> float:
        return eps(self.precision)

    @property
    def grade(self) -> str:
        """The contract a table of this precision is matched at: float64 values carry float64
        angles; any other precision float32's at least."""
        return "exact" if self.precision == "float64" else "float32"

    @property
    def rounding(self) -> float:
        """Error that rounding the values alone can cause (C_VALUE ulps of the amplitude)."""
        return C_VALUE * self.eps * self.amplitude.value

    @property
    def angle_noise(self) -> float:
        """Floor of the angle noise: atan2 of values rounded to `noise`."""
        return max(self.noise, eps("float64"))


@dataclass(frozen=True)
class Candidate:
    """A Spec and how far its table is from the one given (err_ratio <= 1: within tolerance)."""

    spec: Spec
    max_abs_err: float
    err_ratio: float
    rows: int = 0           # rows compared (spec.length: every row; fewer: only the ends)

    @property
    def within(self) -> bool:
        return self.err_ratio <= 1.0


def check_ends(spec: Spec, values: np.ndarray, valid: np.ndarray, ctx: Context,
               law: Optional[Law] = None) -> Candidate:
    """The first and last CHECK_ROWS rows: cheap, and where a wrong offset or law shows."""
    length = spec.length
    if length <= 2 * CHECK_ROWS:
        return compare(spec, values, valid, ctx, 0, length, law)
    parts = [compare(spec, values, valid, ctx, a, a + CHECK_ROWS, law)
             for a in (0, length - CHECK_ROWS)]
    worst = max(parts, key=lambda c: (c.err_ratio, c.max_abs_err))
    return Candidate(spec, worst.max_abs_err, worst.err_ratio, 2 * CHECK_ROWS)


def compare(spec: Spec, values: np.ndarray, valid: np.ndarray, ctx: Context,
            start: int, stop: int, law: Optional[Law] = None) -> Candidate:
    """Max error and error/tolerance over rows start..stop (all-zero rows left out)."""
    model = _Model.of(spec, ctx, law)
    rows = max(1, min(stop - start, CHUNK_ELEMENTS // spec.d_model))
    step_cos, step_sin = model.steps(rows)
    ref, tol, extra = (np.empty((rows, spec.d_model)) for _ in range(3))
    floor = None
    if start == 0 and stop == len(values):
        spread = np.linspace(0, stop - 1, min(MEDIAN_ROWS, stop)).astype(np.int64)
        shape = (len(spread), spec.d_model)
        if np.median(model.unit_tolerance(spread, np.empty(shape), np.empty(shape))) >= VACUOUS:
            # Angles the dtype cannot hold: only agreement to rounding of the values proves it.
            floor = 2.0 * (C_VALUE * ctx.eps + ctx.noise) * ctx.amplitude.value
    worst_err = worst_ratio = 0.0
    for a in range(start, stop, rows):
        m = min(rows, stop - a)
        err = model.table(a, step_cos[:m], step_sin[:m], ref[:m], extra[:m])
        np.subtract(values[a:a + m], err, out=err)
        np.abs(err, out=err)
        keep = valid[a:a + m]
        if not keep.all():
            err[~keep] = 0.0
        worst_err = max(worst_err, float(err.max()))
        if floor is None:
            bound = model.tolerance(np.arange(a, a + m), tol[:m], extra[:m])
            worst_ratio = max(worst_ratio, float(np.divide(err, bound, out=bound).max()))
    if floor is not None:
        worst_ratio = worst_err / floor if worst_err <= floor else np.inf
    return Candidate(spec, worst_err, worst_ratio, stop - start)


@dataclass(frozen=True)
class _Model:
    """Per column: the function, its angle per position, and its tolerance coefficients."""

    spec: Spec
    ctx: Context
    inv: np.ndarray         # inverse frequency of each column (0 for padding)
    is_sin: np.ndarray
    live: np.ndarray        # False for padding columns
    tol_const: np.ndarray   # unit-amplitude tolerance at position 0
    tol_slope: np.ndarray   # ... and its growth per position
    fit_slope: Optional[np.ndarray]   # 6 sigma of a measured law's angle error per position

    @classmethod
    def of(cls, spec: Spec, ctx: Context, law: Optional[Law]) -> "_Model":
        d = spec.d_model
        plan = column_plan(spec)
        freqs = inv_freq(spec)
        k = np.zeros(d, dtype=np.int64)
        k[plan.first_cols], k[plan.second_cols] = plan.first_freq, plan.second_freq
        live = np.zeros(d, dtype=bool)
        live[plan.first_cols] = live[plan.second_cols] = True
        is_sin = np.zeros(d, dtype=bool)
        is_sin[plan.first_cols if not spec.cos_first else plan.second_cols] = True
        inv = np.where(live, freqs[k], 0.0)
        two = tolerance(spec.replace(length=2, offset=0, dtype=ctx.precision), ctx.grade)
        fit = None
        if law is not None and law.measured:
            fit = 6.0 * spec.scale * inv * (law.log_scale_err + k * law.rate_err)
        return cls(spec, ctx, inv, is_sin, live, two[0], two[1] - two[0], fit)

    def steps(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """cos and sin of the angle advanced over r = 0 .. rows-1 positions."""
        phi = (self.spec.scale * np.arange(rows, dtype=np.float64))[:, None] * self.inv[None, :]
        return np.cos(phi) * self.live, np.sin(phi) * self.live

    def table(self, row: int, step_cos: np.ndarray, step_sin: np.ndarray, out: np.ndarray,
              scratch: np.ndarray) -> np.ndarray:
        """amplitude * the candidate's rows row .. row + len(out) - 1, into `out`."""
        theta = (self.spec.scale * float(self.spec.offset + row)) * self.inv
        s0, c0 = np.sin(theta), np.cos(theta)
        amp = self.ctx.amplitude.value
        a = amp * np.where(self.is_sin, s0, c0)     # f(t + phi) = a cos(phi) + b sin(phi)
        b = amp * np.where(self.is_sin, c0, -s0)
        np.multiply(step_cos, a, out=out)
        np.multiply(step_sin, b, out=scratch)
        return np.add(out, scratch, out=out)

    def unit_tolerance(self, rows: np.ndarray, out: np.ndarray,
                       scratch: np.ndarray) -> np.ndarray:
        """The tolerance of a unit-amplitude table at these rows, with the law's allowance."""
        pos = (self.spec.offset + rows).astype(np.float64)[:, None]
        np.multiply(pos, self.tol_slope, out=out)
        out += self.tol_const
        if self.fit_slope is not None:      # never buys more than the tolerance itself
            allow = np.multiply(pos, self.fit_slope, out=scratch)
            out += np.minimum(allow, out, out=allow)
        out += 2.0 * self.ctx.noise
        return out

    def tolerance(self, rows: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
        bound = self.unit_tolerance(rows, out, scratch)
        amplitude = self.ctx.amplitude
        if amplitude.scaled or amplitude.err:
            bound *= amplitude.value
            bound += amplitude.err
        return bound
