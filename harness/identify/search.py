"""Find the Spec that reproduces a table, or say how close the nearest ones come.

The search: (1) which of the Spec's column plans the columns satisfy
(structure.py); (2) for each, every pair's frequency and phase (track.py);
(3) the frequency laws (law.py) and offsets (offset.py) they imply; (4) each
candidate Spec is checked against the table - on a few rows first, then on
every row - with harness.tolerance at the table's own precision. The first
candidate within tolerance is the answer: candidates come likeliest first, so
among readings the data cannot tell apart the conventions libraries use win.

Failing that, the table is tried transposed, with its rows reversed and with
its columns re-paired (a permutation of a known table), and the nearest
candidates are reported with their errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from harness.identify.law import DEFAULT_BASE, Law, candidates, fit_rate
from harness.identify.load import LoadedTable
from harness.identify.offset import find_offsets
from harness.identify.structure import (Plan, describe_permutation, pair_columns, pair_residual,
                                        plan_residual, spec_plans)
from harness.identify.track import Track, track
from harness.reference import column_angles, column_plan, reference
from harness.spec import MAX_POSITION, Spec
from harness.tolerance import C_VALUE, eps, tolerance

NOISE_CEILING = 0.05        # a pair further off the unit circle is no pair (bfloat16 is ~0.01)
PRECISIONS = ("float64", "float32", "float16", "bfloat16")   # by growing eps
SAMPLE_ROWS = 64
CHECK_ROWS = 32
MAX_LAWS = 24
N_NEAREST = 5
#: A tolerance this wide accepts anything: when it covers most of a candidate's table (a
#: float32 table at offset 1e10), agreeing proves nothing and the candidate cannot match.
VACUOUS = 0.5


@dataclass(frozen=True)
class Candidate:
    """A Spec and how far its table is from the one given (err_ratio <= 1: within tolerance)."""

    spec: Spec
    max_abs_err: float
    err_ratio: float

    @property
    def within(self) -> bool:
        return self.err_ratio <= 1.0


@dataclass(frozen=True)
class Identification:
    """The answer: `best` reproduces the table (after `permutation`, if one is named)."""

    source: str
    shape: tuple[int, int]
    dtype: str
    best: Optional[Candidate]
    nearest: tuple[Candidate, ...] = ()
    permutation: str = ""
    columns: tuple[int, ...] = ()     # table column j is column columns[j] of best.spec's table
    notes: tuple[str, ...] = ()

    @property
    def matched(self) -> bool:
        return self.best is not None and not self.permutation


@dataclass(frozen=True)
class _Context:
    """What every check of one table shares: its precision and its ignored (all-zero) rows."""

    dtype: str          # the output dtype of candidate Specs
    precision: str      # the dtype whose eps sets the tolerance
    noise: float        # rounding seen in the table itself (|sin^2 + cos^2 - 1|)

    @property
    def eps(self) -> float:
        return eps(self.precision)

    @property
    def angle_noise(self) -> float:
        """Floor of the angle noise: atan2 of values rounded to `noise`."""
        return max(self.noise, eps("float64"))


def identify(table: LoadedTable) -> Identification:
    """Identify `table`; never raises for a table that simply matches nothing."""
    values = table.values
    valid = np.abs(values).max(axis=1) > 0
    if not valid.any():
        raise ValueError(f"table is all zeros: nothing to identify ({table.source})")
    ctx = _context(values, valid, table.dtype)
    notes = _notes(table, valid, ctx)
    answer = dict(source=table.source, shape=table.shape, dtype=ctx.dtype)
    found, tried = _search(values, valid, ctx)
    if found is not None:
        return Identification(**answer, best=found, notes=notes + _match_notes(found.spec))
    for name, fix in (("transposed: the file holds [d_model, length]", _transposed),
                      ("rows in reverse order (positions descending, like Transformer-XL's "
                       "relative table)", _reversed_rows)):
        again = fix(values, ctx)
        if again is not None:
            return Identification(**answer, best=again, permutation=name, notes=notes)
    permuted = _permuted_columns(values, valid, ctx)
    if permuted is not None:
        best, name, columns = permuted
        return Identification(**answer, best=best, permutation=name, columns=columns, notes=notes)
    nearest = _nearest(values, valid, ctx, tried)
    if nearest and nearest[0].within:    # a common convention the search's readings missed
        best = nearest[0]
        return Identification(**answer, best=best, notes=notes + _match_notes(best.spec))
    return Identification(**answer, best=None, nearest=nearest, notes=notes)


# -- precision ----------------------------------------------------------------------

def _context(values: np.ndarray, valid: np.ndarray, stored: str) -> _Context:
    """Tolerance at the stored dtype, or coarser when the values carry less precision.

    The precision is read off the pairs: |sin^2 + cos^2 - 1| under the best
    Spec plan, or under the best re-pairing of the columns for a permuted
    table. A table with no pairs at all keeps its stored dtype.
    """
    sample = values[_sample_rows(valid)]
    noise = min(plan_residual(sample, p) for p in spec_plans(values.shape[1]))
    if noise > NOISE_CEILING:
        pairing = pair_columns(sample, NOISE_CEILING)
        complete = 2 * len(pairing.first) >= values.shape[1] - 1 and len(pairing.first)
        residual = pair_residual(sample, pairing.first, pairing.second)
        noise = float(residual.max()) if complete else -1.0
    if noise < 0:
        return _Context(stored or "float64", stored or "float64", 0.0)
    implied = next(p for p in PRECISIONS if 4.0 * eps(p) >= noise or p == PRECISIONS[-1])
    precision = max(stored or "float64", implied, key=PRECISIONS.index)
    return _Context(stored or implied, precision, noise)


def _sample_rows(valid: np.ndarray) -> np.ndarray:
    rows = np.flatnonzero(valid)
    spread = rows[np.linspace(0, len(rows) - 1, min(SAMPLE_ROWS, len(rows))).astype(int)]
    return np.union1d(rows[:SAMPLE_ROWS], spread)


# -- the Spec search -----------------------------------------------------------------

def _search(values: np.ndarray, valid: np.ndarray,
            ctx: _Context) -> tuple[Optional[Candidate], list[Candidate]]:
    """The first Spec within tolerance, and every candidate tried (for `nearest`)."""
    length, d_model = values.shape
    sample = values[_sample_rows(valid)]
    residuals = {i: plan_residual(sample, p) for i, p in enumerate(spec_plans(d_model))}
    lowest = min(residuals.values())
    allowed = min(max(4.0 * lowest, 16.0 * ctx.eps), NOISE_CEILING)
    tried: list[Candidate] = []
    for i, plan in enumerate(spec_plans(d_model)):
        if residuals[i] > allowed:
            continue
        n = plan.n_pairs
        tr = track(values, plan.sin_cols[:n], plan.cos_cols[:n], valid, ctx.angle_noise)
        rate = fit_rate(tr, ctx.eps) if tr is not None else None
        if rate is None and tr is not None and n >= 2 and np.median(tr.slope) < 0:
            continue            # the sin/cos-swapped twin of the right plan: angles run backwards
        best: Optional[tuple[int, Candidate]] = None
        for law in candidates(rate, plan.half_width, n)[:MAX_LAWS]:
            if best is not None and law.rank > best[0]:
                break           # equally likely readings are all checked; the closest wins
            found = _try_law(values, valid, ctx, plan, law, tr, tried)
            # equally likely and both within tolerance: the closer table is the better reading
            # (err_ratio would favour a wrong reading whose error sits where a float16
            # tolerance is loosest, at large angles)
            if found is not None and (best is None or found.max_abs_err < best[1].max_abs_err):
                best = (law.rank, found)
        if best is not None:
            return best[1], tried
    return None, tried


def _try_law(values: np.ndarray, valid: np.ndarray, ctx: _Context, plan: Plan, law: Law,
             tr: Optional[Track], tried: list[Candidate]) -> Optional[Candidate]:
    length, d_model = values.shape
    n = plan.n_pairs
    omega = law.omega(plan.half_width, n)
    phase, phase_err = _phases(values, valid, plan, omega, tr, ctx)
    for offset in find_offsets(omega, phase, phase_err, ctx.eps, MAX_POSITION - length, length):
        try:
            spec = Spec(length, d_model, base=law.base, layout=plan.layout,
                        freq_shift=law.freq_shift, offset=offset, dtype=ctx.dtype,
                        cos_first=plan.cos_first, odd=plan.odd, scale=law.scale)
        except ValueError:
            continue
        cand = _check(spec, values, valid, ctx, law)
        tried.append(cand)
        if cand.within:
            return cand
    return None


def _phases(values: np.ndarray, valid: np.ndarray, plan: Plan, omega: np.ndarray,
            tr: Optional[Track], ctx: _Context) -> tuple[np.ndarray, np.ndarray]:
    """Angle of each pair at row 0: from the track, or from the first row of a tiny table."""
    if tr is not None:
        return tr.phase, tr.phase_err
    row = int(np.flatnonzero(valid)[0])
    n = plan.n_pairs
    theta = np.arctan2(values[row, plan.sin_cols[:n]], values[row, plan.cos_cols[:n]])
    err = np.full(n, 2.0 * max(ctx.noise, ctx.eps))
    return np.mod(theta - omega * row, 2 * np.pi), err


def _check(spec: Spec, values: np.ndarray, valid: np.ndarray, ctx: _Context,
           law: Optional[Law] = None) -> Candidate:
    """A few rows at each end first (cheap), every row only if those pass."""
    length = spec.length
    ends = [(0, min(length, CHECK_ROWS)), (max(length - CHECK_ROWS, 0), length)]
    if length > 2 * CHECK_ROWS:
        partial = [_compare(spec, values, valid, ctx, a, b, law) for a, b in ends]
        if any(c.err_ratio > 1.0 for c in partial):
            return max(partial, key=lambda c: c.err_ratio)
    return _compare(spec, values, valid, ctx, 0, length, law)


def _compare(spec: Spec, values: np.ndarray, valid: np.ndarray, ctx: _Context,
             start: int, stop: int, law: Optional[Law] = None) -> Candidate:
    """Max error and error/tolerance over rows start..stop (all-zero rows left out).

    The tolerance is harness.tolerance at the table's precision, plus the noise
    seen in the table, plus - for a base or scale taken as measured - what the
    fit's own uncertainty does to each angle, capped at the tolerance itself (a
    poorly measured reading never buys more than twice the tolerance).
    """
    part = spec.replace(length=stop - start, offset=spec.offset + start)
    err = reference(part)                       # in place from here on: big tables are slow enough
    np.subtract(values[start:stop], err, out=err)
    np.abs(err, out=err)
    rows = valid[start:stop]
    if not rows.all():
        err[~rows] = 0.0
    ratio = tolerance(part.replace(dtype=ctx.precision))
    if law is not None and law.measured:
        ratio += np.minimum(_fit_allowance(part, law), ratio)
    ratio += 2.0 * ctx.noise
    if stop - start == len(values) and np.median(ratio) >= VACUOUS:
        # Angles the dtype cannot hold: only agreement to rounding of the values proves a match.
        floor = 2.0 * (C_VALUE * ctx.eps + ctx.noise)
        worst = float(err.max())
        return Candidate(spec, worst, worst / floor if worst <= floor else np.inf)
    np.divide(err, ratio, out=ratio)
    return Candidate(spec, float(err.max()), float(ratio.max()))


def _fit_allowance(spec: Spec, law: Law) -> np.ndarray:
    """6 sigma of the angle error a measured scale / rate causes: theta * (d ln s + k d rate)."""
    plan = column_plan(spec)
    k = np.zeros(spec.d_model)
    k[plan.first_cols], k[plan.second_cols] = plan.first_freq, plan.second_freq
    return 6.0 * np.abs(column_angles(spec)) * (law.log_scale_err + k * law.rate_err)[None, :]


# -- when nothing matches as it is ---------------------------------------------------

def _transposed(values: np.ndarray, ctx: _Context) -> Optional[Candidate]:
    flipped = np.ascontiguousarray(values.T)
    if flipped.shape[1] < 2:
        return None
    return _search(flipped, np.abs(flipped).max(axis=1) > 0, ctx)[0]


def _reversed_rows(values: np.ndarray, ctx: _Context) -> Optional[Candidate]:
    flipped = np.ascontiguousarray(values[::-1])
    return _search(flipped, np.abs(flipped).max(axis=1) > 0, ctx)[0]


def _permuted_columns(values: np.ndarray, valid: np.ndarray,
                      ctx: _Context) -> Optional[tuple[Candidate, str, tuple[int, ...]]]:
    """Re-pair the columns by sin^2 + cos^2 = 1, sort pairs by frequency, search again."""
    pairing = pair_columns(values[_sample_rows(valid)], max(2.0 * ctx.noise, 16.0 * ctx.eps))
    if len(pairing.first) < 2 or len(pairing.singles) + len(pairing.zeros) > 1:
        return None
    tr = track(values, pairing.first, pairing.second, valid, ctx.angle_noise)
    if tr is None:
        return None
    forward = tr.slope >= 0
    sin = np.where(forward, pairing.first, pairing.second)
    cos = np.where(forward, pairing.second, pairing.first)
    fastest = np.argsort(-np.abs(tr.slope), kind="stable")
    order = np.concatenate([sin[fastest], pairing.singles, cos[fastest], pairing.zeros])
    found, _ = _search(np.ascontiguousarray(values[:, order]), valid, ctx)
    if found is None:
        return None
    spec, name, columns = describe_permutation(found.spec, order)
    return Candidate(spec, found.max_abs_err, found.err_ratio), name, columns


def _nearest(values: np.ndarray, valid: np.ndarray, ctx: _Context,
             tried: list[Candidate]) -> tuple[Candidate, ...]:
    """The closest of everything tried and of the common conventions, scored on every row."""
    length, d_model = values.shape
    pool = list(tried)
    for plan in spec_plans(d_model):
        for shift in (0, 1):
            try:
                spec = Spec(length, d_model, base=DEFAULT_BASE, layout=plan.layout,
                            freq_shift=shift, dtype=ctx.dtype, cos_first=plan.cos_first,
                            odd=plan.odd)
            except ValueError:
                continue
            pool.append(_compare(spec, values, valid, ctx, 0, min(length, CHECK_ROWS)))
    unique = {c.spec: c for c in sorted(pool, key=lambda c: -c.max_abs_err)}
    closest = sorted(unique.values(), key=lambda c: c.max_abs_err)[:N_NEAREST]
    full = [_compare(c.spec, values, valid, ctx, 0, length) for c in closest]
    return tuple(sorted(full, key=lambda c: c.max_abs_err))


# -- what to tell the user besides the Spec -------------------------------------------

def _notes(table: LoadedTable, valid: np.ndarray, ctx: _Context) -> tuple[str, ...]:
    notes = []
    if table.batch > 1:
        notes.append(f"dropped a leading batch axis of {table.batch} identical copies")
    zero_rows = np.flatnonzero(~valid)
    if len(zero_rows):
        shown = ", ".join(map(str, zero_rows[:8])) + (" ..." if len(zero_rows) > 8 else "")
        notes.append(f"rows {shown} are all zeros (a padding row, like fairseq's padding_idx) "
                     "and were left out of the match")
    if table.dtype and ctx.precision != table.dtype:
        notes.append(f"values stored as {table.dtype} carry only {ctx.precision} precision: "
                     f"matched at {ctx.precision} tolerance")
    return tuple(notes)


def _match_notes(spec: Spec) -> tuple[str, ...]:
    notes = []
    if spec.d_model % 2 == 0:
        notes.append("even width: the odd-width policy (odd) cannot be seen and is reported as "
                     "the default")
    if spec.n_freq < 2:
        notes.append("a single frequency: base and freq_shift cannot be seen and are reported as "
                     "the defaults")
    if spec.base < 1:
        notes.append(f"base < 1: frequencies rise along the columns - the base "
                     f"{1 / spec.base:.6g} table with its frequency order reversed")
    if spec.cos_first:
        notes.append("cos before sin: the sin-first table with its sin and cos halves swapped "
                     "(diffusers flip_sin_to_cos=True)")
    return tuple(notes)
