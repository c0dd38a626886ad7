"""Identify a diffusion timestep embedding, given the timesteps it embeds.

Column k of one block and column half + k of the other are cos and sin of `a_k t`, with
`a_k = scale * max_period ** (-k / (half - freq_shift))`. Each rate a_k is measured from the
angles atan2(sin, cos) at every timestep, slowest column first (its angles do not wrap), each
faster one predicted from the line ln a_k vs k so far and refined on the wrapped residuals. The
line gives scale (intercept) and ln(max_period) / (half - freq_shift) (slope): those two trade,
so the usual shifts (0: guided-diffusion; 1: DDPM) and periods are tried first.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from harness.core.kinds.timestep import TimestepSpec
from harness.identify.files import Stored, open_file
from harness.identify.readers.answer import Answer, check, decide
from harness.identify.readers.arrays import EMB, TIMESTEPS, matrix
from harness.identify.readers.arrays import read as read_array
from harness.identify.law import nice_values, significant_digits
from harness.util.exitcodes import UsageError

COMMON_PERIODS = (10000.0, 1000.0, 100000.0)
COMMON_SHIFTS = (0.0, 1.0)
COMMON_SCALES = (1.0, 1000.0)
#: Relative error, in ln, within which a rounder reading of a measured number is tried.
LOG_TOL = 1e-4


def from_embedding(emb: np.ndarray, timesteps: np.ndarray, source: str, dtype: str) -> Answer:
    """The TimestepSpec whose reference is `emb` ([count, dim]) for these timesteps."""
    count, dim = emb.shape
    t = np.asarray(timesteps, dtype=np.float64).reshape(-1)
    if len(t) != count:
        raise UsageError(f"timesteps must have one entry per embedding row: {len(t)} timesteps "
                         f"for {count} rows ({source})")
    if dim < 2:
        raise UsageError(f"a timestep embedding has at least 2 columns, got {dim} ({source})")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise UsageError(f"timesteps must be finite numbers >= 0 ({source})")
    notes = []
    if len(set(t.tolist())) == 1:
        notes.append("one distinct timestep cannot tell max_period, freq_shift and scale apart: "
                     "many specs give this embedding, this is one of them")
    if dim % 2 and np.any(emb[:, -1] != 0):
        notes.append(f"the width {dim} is odd but the last column is not zero: every "
                     "implementation here pads an odd width with one zero column")
    readings = _readings(emb, t, dtype)
    return decide("timestep", source, emb.shape, dtype, readings,
                  lambda spec, note: check(spec, emb, note), notes)


def _readings(emb: np.ndarray, t: np.ndarray, dtype: str) -> Iterator[tuple[TimestepSpec, str]]:
    half = emb.shape[1] // 2
    steps = tuple(float(x) for x in t)
    for cos_first in (True, False):
        first, second = emb[:, :half], emb[:, half:2 * half]
        cos, sin = (first, second) if cos_first else (second, first)
        rates = _rates(np.arctan2(sin, cos), t)
        for fields, note in _laws(rates, half):
            try:
                yield TimestepSpec(steps, emb.shape[1], cos_first=cos_first, dtype=dtype,
                                   **fields), note
            except ValueError:     # a reading the spec refuses (a shift >= half)
                continue


def _rates(theta: np.ndarray, t: np.ndarray) -> np.ndarray:
    """a_k with theta[:, k] == a_k t (mod 2 pi), slowest column first."""
    half = theta.shape[1]
    rates = np.zeros(half)
    moving = t > 0
    if not moving.any():
        return np.ones(half)
    tt = t[moving]
    order = np.argsort(tt)
    for done, k in enumerate(range(half - 1, -1, -1)):
        angles = theta[moving, k]
        if done < 2:                        # grow from the smallest timestep: no wrap there
            a = angles[order[0]] / tt[order[0]]
            for i in range(1, len(order) + 1):
                a = _refine(a, angles[order[:i]], tt[order[:i]])
        else:
            ks = np.arange(k + 1, half)
            slope, icpt = np.polyfit(ks, np.log(np.maximum(rates[k + 1:], 1e-300)), 1)
            a = math.exp(icpt + slope * k)
        for _ in range(3):
            a = _refine(a, angles, tt)
        rates[k] = a
    return rates


def _refine(a: float, angles: np.ndarray, t: np.ndarray) -> float:
    residual = np.angle(np.exp(1j * (angles - a * t)))
    return a + float(t @ residual) / float(t @ t)


def _laws(rates: np.ndarray, half: int) -> Iterator[tuple[dict, str]]:
    """(max_period, freq_shift, scale) readings of the rates, the usual ones first."""
    if half == 1 or np.any(rates <= 0):
        for scale in dict.fromkeys(COMMON_SCALES + tuple(_round(float(abs(rates[0]))))):
            yield {"scale": scale, "freq_shift": 0.0}, (
                "one frequency (dim 2 or 3) cannot tell max_period or freq_shift: the defaults "
                "are named")
        return
    k = np.arange(half)
    slope, icpt = np.polyfit(k, np.log(rates), 1)
    scales = list(dict.fromkeys([s for s in COMMON_SCALES if abs(math.log(s) - icpt) < 0.1]
                                + _round(math.exp(icpt))))
    pairs: list[tuple[float, float]] = []
    for shift in COMMON_SHIFTS:
        pairs += [(p, shift) for p in _round(math.exp(-slope * (half - shift)))]
    for period in COMMON_PERIODS:
        shift = half + math.log(period) / slope
        pairs += [(period, s) for s in _round(shift, absolute=True)]
    pairs = sorted(dict.fromkeys(pairs), key=lambda ps: (ps[0] not in COMMON_PERIODS,
                                                         ps[1] not in COMMON_SHIFTS,
                                                         significant_digits(ps[0])
                                                         + significant_digits(abs(ps[1]) or 1.0)))
    for (period, shift), scale in ((p, s) for p in pairs for s in scales):
        note = "" if shift in COMMON_SHIFTS else (
            f"max_period and freq_shift trade (only ln(max_period) / (dim // 2 - freq_shift) "
            f"shows): freq_shift {shift:g} is read with max_period {period:g}")
        yield {"max_period": period, "freq_shift": shift, "scale": scale}, note


def _round(x: float, absolute: bool = False) -> list[float]:
    """Round readings of a measured number, then the number."""
    if absolute:
        out = [float(round(x * m) / m) for m in (1, 2, 4, 10, 100) if abs(round(x * m) / m - x) < 1e-3]
        return list(dict.fromkeys(out + [x]))
    return list(dict.fromkeys(nice_values(x, LOG_TOL) + [x])) if x > 0 else [1.0]


#: the array names this reader takes (a file of them goes to it)
CLAIMS = (TIMESTEPS, EMB)


def read(stored: Sequence[Stored], names: dict[str, Stored], given: Optional[str],
         forced: bool) -> list[tuple[str, Answer]]:
    """identify's reader: an embedding beside its timesteps (an array, or --timesteps)."""
    steps = [s for n, s in names.items() if TIMESTEPS.search(n)]
    if not steps and given is None:
        if forced:
            raise UsageError("--kind timestep needs the timesteps: an array named 'timesteps' in "
                             "the file, or --timesteps FILE_OR_LIST")
        return []
    t = timesteps_from(given) if given is not None else read_array(steps[0])[0].reshape(-1)
    tables = [s for n, s in names.items() if EMB.search(n)]
    if not tables:
        tables = [s for s in names.values() if s not in steps]
    if len(tables) != 1:
        raise UsageError("a timestep embedding file needs one embedding beside its timesteps "
                         "(named 'emb' or 'embedding' when there are several arrays); found "
                         f"{sorted(names)}")
    entry = tables[0]
    values, dtype = read_array(entry)
    emb = matrix(values, entry.source, "the embedding")
    return [(entry.name, from_embedding(emb, t, entry.source, dtype))]


def timesteps_from(text: str) -> np.ndarray:
    """--timesteps: a file holding one array, or numbers separated by commas."""
    if Path(text).suffix and Path(text).exists():
        stored = open_file(text)
        if len(stored) != 1:
            raise UsageError(f"--timesteps file {text!r} must hold one array, it holds "
                             f"{[s.name for s in stored]}")
        return read_array(stored[0])[0].reshape(-1)
    try:
        return np.array([float(x) for x in text.split(",") if x.strip()])
    except ValueError:
        raise UsageError(f"--timesteps must be a file of timesteps or numbers separated by "
                         f"commas (0,250,500), got {text!r}") from None
