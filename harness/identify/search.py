"""Find the Spec that reproduces a table, or say how close the nearest ones come.

The search reads a sample, never the whole table: (1) the amplitude of the values
(amplitude.py) and which of the Spec's column plans the columns satisfy (structure.py), on a
few hundred rows; (2) for each plan, every pair's frequency and phase (track.py); (3) the
frequency laws (law.py) and offsets (offset.py) they imply, the offsets from at most
OFFSET_PAIRS pairs; (4) each candidate Spec is checked (check.py) on the rows at both ends.
Readings that pass and fit equally well (errors within a small factor: a closeness the data
cannot vouch for decides nothing) are ranked by how simple they are (`Law.simplicity`: fewest
digits of the base, then the usual shifts 0/1), and the simplest is confirmed on every row,
in chunks. The others that also reproduce the table are kept as `alternatives`: the same
table read another way (Whisper's base 5000 with shift 1 is base 6581 with shift 0).

Failing that, the table is tried transposed, with its rows reversed and with its columns
re-paired (a permutation of a known table), and the nearest candidates are reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from harness.core.kinds.table.spec import MAX_POSITION, Spec
from harness.core.kinds.table.tolerance import eps
from harness.identify.amplitude import Amplitude, find_amplitude
from harness.identify.check import CHECK_ROWS, Candidate, Context, check_ends, compare
from harness.identify.law import DEFAULT_BASE, Law, candidates, fit_rate
from harness.identify.load import LoadedTable, row_peaks
from harness.identify.half import half_note
from harness.identify.notes import match_notes, table_notes
from harness.identify.offset import find_offsets
from harness.identify.structure import (Plan, describe_permutation, pair_columns, pair_residual,
                                        plan_residual, spec_plans)
from harness.identify.track import Track, track
from harness.util.exitcodes import UsageError

NOISE_CEILING = 0.05        # a pair further off the unit circle is no pair (bfloat16 is ~0.01)
PRECISIONS = ("float64", "float32", "float16", "bfloat16")   # by growing eps
SAMPLE_ROWS = 64
MAX_LAWS = 24
N_NEAREST = 5
MAX_ALTERNATIVES = 3
EQUAL_FIT = 4.0             # readings whose errors are within this factor fit equally well
#: Above this the no-match searches that copy the table (transposed, permuted) are skipped.
FALLBACK_BYTES = 256 << 20
OFFSET_PAIRS = 64           # pairs the offset search reads (spread over all frequencies)
#: Pairing columns without a plan compares every column with every other: not above this width.
MAX_PAIRING_WIDTH = 1024
NOT_SINUSOIDAL = "its values lie on no sin/cos circles: not a sinusoidal table"
SINGLE_ROW = ("a single row (one position) cannot determine base, freq_shift, scale or offset: "
              "many Specs reproduce it, this is one of them; identify needs two or more rows")


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
    alternatives: tuple[Candidate, ...] = ()    # other readings of the same table, simplest first
    amplitude: Amplitude = Amplitude()          # table = amplitude.value * best.spec's table
    undetermined: str = ""                      # why `best` is one of many (a single row)

    @property
    def matched(self) -> bool:
        return self.best is not None and not self.permutation and not self.undetermined


@dataclass(frozen=True)
class _Reading:
    best: Candidate
    alternatives: tuple[Candidate, ...] = ()


def identify(table: LoadedTable, nearest: bool = True) -> Identification:
    """Identify `table`; never raises for a table that simply matches nothing.

    `nearest=False` skips the no-match searches for an array whose values lie on no
    circles at all (a weight matrix met while scanning a whole checkpoint).
    """
    values = table.values
    valid = (table.peaks if table.peaks is not None else row_peaks(values)) > 0
    if not valid.any():
        raise UsageError(f"table is all zeros: nothing to identify ({table.source})")
    _check_spec_memory(table)
    sample = _rows(values, _sample_rows(valid))
    amplitude = find_amplitude(sample, spec_plans(values.shape[1]), eps(table.dtype or "float64"))
    ctx = _context(sample / amplitude.value, table.dtype, amplitude)
    notes = table_notes(table, valid, ctx)
    answer = dict(source=table.source, shape=table.shape, dtype=ctx.dtype, amplitude=amplitude)
    if not nearest and not amplitude.seen:
        return Identification(**answer, best=None, notes=notes + (NOT_SINUSOIDAL,))
    found, tried = _search(values, valid, ctx)
    if found is not None:
        single = SINGLE_ROW if np.count_nonzero(valid) == 1 else ""
        return Identification(**answer, best=found.best, alternatives=found.alternatives,
                              notes=notes + match_notes(found.best.spec), undetermined=single)
    return _unmatched(values, valid, ctx, tried, answer, notes)


def _unmatched(values: np.ndarray, valid: np.ndarray, ctx: Context, tried: list[Candidate],
               answer: dict, notes: tuple[str, ...]) -> Identification:
    """No Spec as it is: a known mix-up of one (transposed, reversed rows, permuted columns),
    a common convention the readings missed, or the nearest candidates."""
    small = values.nbytes <= FALLBACK_BYTES
    fixes = [("rows in reverse order (positions descending, like Transformer-XL's relative "
              "table)", _reversed_rows)]
    if small:
        fixes.insert(0, ("transposed: the file holds [d_model, length]", _transposed))
    else:
        notes += (f"not tried transposed or with its columns permuted: those searches copy "
                  f"the table, and it is over {FALLBACK_BYTES >> 20} MiB",)
    for name, fix in fixes:
        again = fix(values, ctx)
        if again is not None:
            return Identification(**answer, best=again, permutation=name, notes=notes)
    permuted = _permuted_columns(values, valid, ctx) if small else None
    if permuted is not None:
        best, name, columns = permuted
        return Identification(**answer, best=best, permutation=name, columns=columns, notes=notes)
    closest = _nearest(values, valid, ctx, tried)
    if closest and closest[0].within:    # a common convention the search's readings missed
        return Identification(**answer, best=closest[0],
                              notes=notes + match_notes(closest[0].spec))
    half = half_note(values, ctx.dtype, closest)
    return Identification(**answer, best=None, nearest=closest,
                          notes=notes + ((half,) if half else ()))


def _check_spec_memory(table: LoadedTable) -> None:
    """A Spec refuses a size whose float64 reference would not fit in memory; say so up front
    (the search would otherwise skip every candidate and report no match)."""
    length, d_model = table.shape
    try:
        Spec(length, d_model, odd="pad" if d_model % 2 else "error")
    except ValueError as exc:
        raise UsageError(f"{table.source}: no Spec of this size can be made here: {exc}") from None


# -- samples and precision ----------------------------------------------------------

def _sample_rows(valid: np.ndarray) -> np.ndarray:
    rows = np.flatnonzero(valid)
    spread = rows[np.linspace(0, len(rows) - 1, min(SAMPLE_ROWS, len(rows))).astype(int)]
    return np.union1d(rows[:SAMPLE_ROWS], spread)


def _rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """These rows in float64 (the table may be float16/32, or a memmap)."""
    return np.asarray(values[rows], dtype=np.float64)


def _sample(values: np.ndarray, valid: np.ndarray, ctx: Context) -> np.ndarray:
    return _rows(values, _sample_rows(valid)) / ctx.amplitude.value


def _context(sample: np.ndarray, stored: str, amplitude: Amplitude) -> Context:
    """Tolerance at the stored dtype, or coarser when the values carry less precision.

    The precision is read off the pairs of the (amplitude-normalised) sample:
    |sin^2 + cos^2 - 1| under the best Spec plan, or under the best re-pairing of
    the columns for a permuted table. A table with no pairs keeps its stored dtype.
    """
    noise = min(plan_residual(sample, p) for p in spec_plans(sample.shape[1]))
    if noise > NOISE_CEILING:
        noise = _pairing_noise(sample)
    if noise < 0:
        return Context(stored or "float64", stored or "float64", 0.0, amplitude)
    implied = next(p for p in PRECISIONS if 4.0 * eps(p) >= noise or p == PRECISIONS[-1])
    precision = max(stored or "float64", implied, key=PRECISIONS.index)
    return Context(stored or implied, precision, noise, amplitude)


def _pairing_noise(sample: np.ndarray) -> float:
    """|sin^2 + cos^2 - 1| of the best re-pairing of the columns; -1 when they do not pair."""
    if sample.shape[1] > MAX_PAIRING_WIDTH:
        return -1.0
    pairing = pair_columns(sample, NOISE_CEILING)
    if not len(pairing.first) or 2 * len(pairing.first) < sample.shape[1] - 1:
        return -1.0
    return float(pair_residual(sample, pairing.first, pairing.second).max())


# -- the Spec search -----------------------------------------------------------------

def _search(values: np.ndarray, valid: np.ndarray,
            ctx: Context) -> tuple[Optional[_Reading], list[Candidate]]:
    """The simplest Spec within tolerance with its alternatives, and every candidate tried."""
    sample = _sample(values, valid, ctx)
    plans = spec_plans(values.shape[1])
    residuals = [plan_residual(sample, p) for p in plans]
    allowed = min(max(4.0 * min(residuals), 16.0 * ctx.eps), NOISE_CEILING)
    tried: list[Candidate] = []
    for plan, residual in zip(plans, residuals):
        if residual > allowed:
            continue
        n = plan.n_pairs
        tr = track(values, plan.sin_cols[:n], plan.cos_cols[:n], valid, ctx.angle_noise)
        rate = fit_rate(tr, ctx.eps) if tr is not None else None
        if rate is None and tr is not None and n >= 2 and np.median(tr.slope) < 0:
            continue            # the sin/cos-swapped twin of the right plan: angles run backwards
        laws = candidates(rate, plan.half_width, n)[:MAX_LAWS]
        reading = _read(values, valid, ctx, plan, tr, laws, tried)
        if reading is not None:
            return reading, tried
    return None, tried


def _read(values: np.ndarray, valid: np.ndarray, ctx: Context, plan: Plan, tr: Optional[Track],
          laws: list[Law], tried: list[Candidate]) -> Optional[_Reading]:
    """Round readings: of those that fit at the ends equally well (error within EQUAL_FIT
    times the closest, or at the rounding level), the simplest confirmed on every row wins
    and the others confirmed are alternatives; a worse fit wins only if none of them holds.
    Measured readings only when no round one fits: the likeliest rank, closest first."""
    def fits(group: list[Law]) -> list[tuple[Law, Candidate]]:
        out = [(law, _try_law(values, valid, ctx, plan, law, tr, tried)) for law in group]
        return sorted(((law, c) for law, c in out if c is not None),
                      key=lambda lc: lc[1].max_abs_err)

    simple = fits([law for law in laws if not law.measured])
    if simple:
        limit = EQUAL_FIT * simple[0][1].max_abs_err + ctx.rounding
        equal = sorted((lc for lc in simple if lc[1].max_abs_err <= limit),
                       key=lambda lc: lc[0].simplicity)
        confirmed = (_confirm(equal, values, valid, ctx, tried, 1 + MAX_ALTERNATIVES) or
                     _confirm(simple[len(equal):], values, valid, ctx, tried, 1))
        if confirmed:       # alternatives that also fit equally well on every row
            limit = EQUAL_FIT * confirmed[0].max_abs_err + ctx.rounding
            return _Reading(confirmed[0],
                            tuple(c for c in confirmed[1:] if c.max_abs_err <= limit))
    measured = [law for law in laws if law.measured]
    for rank in sorted({law.rank for law in measured}):
        confirmed = _confirm(fits([law for law in measured if law.rank == rank]),
                             values, valid, ctx, tried, 1)
        if confirmed:
            return _Reading(confirmed[0])
    return None


def _confirm(fits: list[tuple[Law, Candidate]], values: np.ndarray, valid: np.ndarray,
             ctx: Context, tried: list[Candidate], keep: int) -> list[Candidate]:
    """The first `keep` of these (checked at the ends) that are within tolerance on every row."""
    out: list[Candidate] = []
    checked = {c.spec for c in tried if c.rows == len(values)}   # failed on every row before
    seen: set[Spec] = set()
    for law, ends in fits:
        if len(out) == keep:
            break
        if ends.spec in seen:
            continue
        seen.add(ends.spec)
        if ends.rows == len(values):
            full = ends
        elif ends.spec in checked:
            continue
        else:
            full = compare(ends.spec, values, valid, ctx, 0, len(values), law)
            tried.append(full)
        if full.within:
            out.append(full)
    return out


def _try_law(values: np.ndarray, valid: np.ndarray, ctx: Context, plan: Plan, law: Law,
             tr: Optional[Track], tried: list[Candidate]) -> Optional[Candidate]:
    """The first offset whose Spec passes at both ends of the table."""
    length, d_model = values.shape
    omega = law.omega(plan.half_width, plan.n_pairs)
    phase, phase_err = _phases(values, valid, plan, omega, tr, ctx)
    pick = np.unique(np.linspace(0, len(omega) - 1, min(OFFSET_PAIRS, len(omega))).astype(int))
    for offset in find_offsets(omega[pick], phase[pick], phase_err[pick], ctx.eps,
                               MAX_POSITION - length, length):
        try:
            spec = Spec(length, d_model, base=law.base, layout=plan.layout,
                        freq_shift=law.freq_shift, offset=offset, dtype=ctx.dtype,
                        cos_first=plan.cos_first, odd=plan.odd, scale=law.scale)
        except ValueError:
            continue
        cand = check_ends(spec, values, valid, ctx, law)
        tried.append(cand)
        if cand.within:
            return cand
    return None


def _phases(values: np.ndarray, valid: np.ndarray, plan: Plan, omega: np.ndarray,
            tr: Optional[Track], ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Angle of each pair at row 0: from the track, or from the first row of a tiny table."""
    if tr is not None:
        return tr.phase, tr.phase_err
    row = int(np.flatnonzero(valid)[0])
    n = plan.n_pairs
    first = _rows(values, np.array([row]))[0]
    theta = np.arctan2(first[plan.sin_cols[:n]], first[plan.cos_cols[:n]])
    err = np.full(n, 2.0 * max(ctx.noise, ctx.eps))
    return np.mod(theta - omega * row, 2 * np.pi), err


# -- when nothing matches as it is ---------------------------------------------------

def _transposed(values: np.ndarray, ctx: Context) -> Optional[Candidate]:
    flipped = np.ascontiguousarray(values.T)    # its rows would be strided columns
    if flipped.shape[1] < 2:
        return None
    found = _search(flipped, row_peaks(flipped) > 0, ctx)[0]
    return found.best if found else None


def _reversed_rows(values: np.ndarray, ctx: Context) -> Optional[Candidate]:
    flipped = values[::-1]
    found = _search(flipped, row_peaks(flipped) > 0, ctx)[0]
    return found.best if found else None


def _permuted_columns(values: np.ndarray, valid: np.ndarray,
                      ctx: Context) -> Optional[tuple[Candidate, str, tuple[int, ...]]]:
    """Re-pair the columns by sin^2 + cos^2 = 1, sort pairs by frequency, search again."""
    if values.shape[1] > MAX_PAIRING_WIDTH:
        return None
    pairing = pair_columns(_sample(values, valid, ctx), max(2.0 * ctx.noise, 16.0 * ctx.eps))
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
    found, _ = _search(values[:, order], valid, ctx)
    if found is None:
        return None
    spec, name, columns = describe_permutation(found.best.spec, order)
    return Candidate(spec, found.best.max_abs_err, found.best.err_ratio), name, columns


def _nearest(values: np.ndarray, valid: np.ndarray, ctx: Context,
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
            pool.append(compare(spec, values, valid, ctx, 0, min(length, CHECK_ROWS)))
    # per Spec the closest result, or the one on every row where there is one
    unique = {c.spec: c for c in sorted(pool, key=lambda c: (c.rows == length, -c.max_abs_err))}
    closest = sorted(unique.values(), key=lambda c: c.max_abs_err)[:N_NEAREST]
    full = [c if c.rows == length else compare(c.spec, values, valid, ctx, 0, length)
            for c in closest]
    return tuple(sorted(full, key=lambda c: c.max_abs_err))
