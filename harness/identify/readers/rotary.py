"""Identify a rotary (RoPE) cache, from its cos/sin pair or from its inv_freq vector.

A cache is `A cos((offset + p) inv_freq[f(j)])` and the same with sin: the amplitude A (the
attention scaling) is sqrt(cos^2 + sin^2); which columns repeat says the layout (the second
half repeats the first: "half"; neighbours repeat: "interleaved"); the angle atan2(sin, cos)
advances by inv_freq_k per row, which measures every frequency; rope_laws reads the rope_type
and its parameters off them; the phases at row 0 give the offset (harness.identify.offset).
Each reading is rebuilt with the kind's reference and judged by its tolerance. A vector is
judged against `spec.inv_freq()` instead: it holds no length, offset or amplitude.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from harness.core.kinds.rotary import RotarySpec
from harness.core.kinds.table.spec import MAX_POSITION
from harness.core.kinds.table.tolerance import C_FREQ, C_VALUE, eps
from harness.identify.files import Stored
from harness.identify.readers.answer import C_SCALED, Answer, check, check_inv_freq, decide
from harness.identify.readers.arrays import COS, FUNCTION, INV_FREQ, SIN, matrix
from harness.identify.readers.arrays import read as read_array
from harness.identify.readers.rope_laws import readings
from harness.identify.offset import find_offsets
from harness.util.exitcodes import UsageError

#: Rows whose angles measure the frequencies (more only sharpen what the check confirms).
MEASURE_ROWS = 8192
#: Rows whose phases give the offset.
PHASE_ROWS = 64
#: A reading whose frequencies are further than this many error bars from the measured ones
#: is not worth rebuilding the cache for (kept for the nearest list only).
CLOSE = 16.0
#: Frequencies measured from a cache are trusted to no better than this, relatively.
REL_FLOOR = 1e-9
#: Further than this off the unit circle (after the amplitude), a pair is no cos/sin pair.
CIRCLE = 0.05
#: length named for a spec read off an inv_freq vector, which has none.
VECTOR_LENGTH = 4096


def from_inv_freq(omega: np.ndarray, source: str, dtype: str) -> Answer:
    """The rotary spec whose `inv_freq()` is this vector."""
    omega = np.asarray(omega, dtype=np.float64)
    check_vector(omega, source)
    n = len(omega)
    tol = eps(dtype) * (C_VALUE + C_FREQ * np.abs(np.log(omega)) + C_SCALED)
    notes = [f"an inv_freq vector holds no length, offset or attention scaling: length "
             f"{VECTOR_LENGTH} (or original_max_position_embeddings) and offset 0 are named, "
             "and only the frequencies are compared"]

    def spec_of(fields: dict) -> RotarySpec:
        length = fields.get("original_max_position_embeddings") or VECTOR_LENGTH
        if fields.get("rope_type") == "longrope":
            fields = {**fields, "original_max_position_embeddings": max(length, 2)}
        return RotarySpec(length, head_dim=2 * n, dtype=dtype, **fields)

    close, far = _ranked(omega, tol, (None, 0.0), spec_of)
    return decide("rotary", source, (n,), dtype, close,
                  lambda spec, note: check_inv_freq(spec, omega, note), notes,
                  compared="inv_freq", fallback=far)


def check_vector(omega: np.ndarray, source: str) -> None:
    """A vector that cannot be inverse frequencies is bad input, said with what was expected."""
    if omega.ndim != 1 or not len(omega):
        raise UsageError(f"inv_freq must be a vector [rotary_dim / 2], got shape {omega.shape} "
                         f"({source})")
    if not np.all(np.isfinite(omega)) or np.any(omega <= 0) or np.any(omega > math.pi):
        raise UsageError(f"inv_freq must hold finite frequencies in (0, pi] (radians per "
                         f"position), got values from {omega.min():.3g} to {omega.max():.3g} "
                         f"({source}): not a rotary inv_freq")
    if np.any(np.diff(omega) > 0):
        first = int(np.flatnonzero(np.diff(omega) > 0)[0])
        raise UsageError(f"inv_freq must not increase with k (every rope_type's frequencies fall "
                         f"from k = 0), but [{first + 1}] > [{first}] ({source}): not a rotary "
                         "inv_freq")


def from_pair(cos: np.ndarray, sin: np.ndarray, source: str, dtype: str) -> Answer:
    """The rotary spec whose `reference` is this cos/sin pair (each [length, rot])."""
    length, width = cos.shape
    shape = (2, length, width)
    if width % 2:
        raise UsageError(f"a rotary cache has an even width (cos/sin pairs), got {width} columns "
                         f"({source})")
    if length < 2:
        raise UsageError(f"a rotary cache of one position cannot tell its frequencies; identify "
                         f"needs two or more rows ({source})")
    radius = np.hypot(cos, sin)
    amplitude = float(np.median(radius))
    noise = max(float(np.max(np.abs(radius - amplitude))) / amplitude, eps(dtype)) if amplitude else 1.0
    layout = _layout(cos, sin, 4 * noise * amplitude + eps(dtype))
    if noise > CIRCLE or layout is None:
        why = (f"cos^2 + sin^2 varies by {noise:.2g} of its size: these are not cos and sin of one "
               "angle" if noise > CIRCLE else "neither the second half of the columns repeats the "
               "first (layout 'half') nor each column its neighbour ('interleaved')")
        return Answer("rotary", source, shape, dtype, None, notes=(f"not a rotary cache: {why}",))
    cols = np.arange(width // 2) if layout == "half" else np.arange(0, width, 2)
    rows = min(length, MEASURE_ROWS)
    theta = np.arctan2(sin[:rows, cols], cos[:rows, cols])
    omega, rel = _rates(theta, noise)
    if np.any(omega <= 0):
        return Answer("rotary", source, shape, dtype, None, notes=(
            "not a rotary cache: the angle atan2(sin, cos) falls with the position in some "
            "columns (sin negated, or positions descending)",))
    phase_rows = min(rows, PHASE_ROWS)

    def spec_of(fields: dict) -> RotarySpec:
        if fields.get("rope_type") == "longrope":
            fields = {**fields, "original_max_position_embeddings": max(length, 2)}
        return RotarySpec(length, head_dim=width, layout=layout, dtype=dtype, **fields)

    def placed(found: list[tuple[RotarySpec, str]]) -> Iterator[tuple[RotarySpec, str]]:
        """Each reading at the offset its phases give (none: dropped)."""
        for spec, note in found:
            offset = _offset(spec.inv_freq(), theta[:phase_rows], noise, dtype, length)
            if offset is not None:
                yield spec.replace(offset=offset), note

    actual = np.stack([cos, sin])
    amp_err = (noise + eps(dtype)) / math.sqrt(radius.size)
    close, far = _ranked(omega, rel, (amplitude, amp_err), spec_of)
    notes = ["a cache holds only the rotated dims: head_dim is named equal to its width (a partial "
             "rotary's head_dim is not in it)"]
    return decide("rotary", source, shape, dtype, placed(close),
                  lambda spec, note: check(spec, actual, note), notes, fallback=placed(far))


def _layout(cos: np.ndarray, sin: np.ndarray, allowed: float) -> Optional[str]:
    n = cos.shape[1] // 2
    for name, a, b in (("half", np.s_[:, :n], np.s_[:, n:]), ("interleaved", np.s_[:, 0::2],
                                                              np.s_[:, 1::2])):
        if max(np.max(np.abs(cos[a] - cos[b])), np.max(np.abs(sin[a] - sin[b]))) <= allowed:
            return name
    return None


def _rates(theta: np.ndarray, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Each column's angle per row (< pi: no aliasing) and its relative error bar."""
    rows = len(theta)
    step = np.angle(np.exp(1j * np.diff(theta, axis=0)))
    walked = np.concatenate([np.zeros((1, theta.shape[1])), np.cumsum(step, axis=0)])
    p = np.arange(rows, dtype=np.float64) - (rows - 1) / 2
    omega = p @ walked / (p @ p)                      # least squares: noise / sqrt(rows^3)
    residual = walked - p[:, None] * omega[None, :]
    residual -= residual.mean(axis=0)
    spread = np.max(np.abs(residual), axis=0) + noise
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.maximum(4 * spread / (math.sqrt(p @ p) * np.abs(omega)), REL_FLOOR)
    return omega, rel


def _offset(inv: np.ndarray, theta: np.ndarray, noise: float, dtype: str,
            length: int) -> Optional[int]:
    """The first position, from the phases at row 0 of these exact frequencies."""
    p = np.arange(len(theta))[:, None]
    phase = np.angle(np.mean(np.exp(1j * (theta - p * inv[None, :])), axis=0)) % (2 * math.pi)
    found = find_offsets(inv, phase, np.full(len(inv), noise), eps(dtype),
                         MAX_POSITION - length, length, keep=1)
    return found[0] if found else None


def _ranked(omega: np.ndarray, rel: np.ndarray, amplitude: tuple[Optional[float], float],
            spec_of: Any) -> tuple[list[tuple[RotarySpec, str]], list[tuple[RotarySpec, str]]]:
    """Readings whose frequencies are within CLOSE error bars of `omega`, in the laws' order,
    and the nearest few of the others."""
    tol = float(np.clip(np.max(rel), 1e-7, 1e-2))
    close: list[tuple[RotarySpec, str]] = []
    far: list[tuple[float, int, RotarySpec, str]] = []
    for spec, note in _specs(readings(omega, tol, *amplitude), spec_of):
        miss = float(np.max(np.abs(np.log(spec.inv_freq() / omega)) / rel))
        if miss <= CLOSE:
            close.append((spec, note))
        else:
            far.append((miss, len(far), spec, note))
    return close, [(s, n) for _, _, s, n in sorted(far)[:5]]


def _specs(found: Iterator[tuple[dict, str]], spec_of: Any) -> Iterator[tuple[RotarySpec, str]]:
    for fields, note in found:
        try:
            spec = spec_of(fields)
        except ValueError:       # a reading the spec refuses (an ompe below 2, a huge angle)
            continue
        yield spec, note


#: the array names this reader takes (a file of them goes to it)
CLAIMS = (COS, SIN, INV_FREQ)


def read(stored: Sequence[Stored], names: dict[str, Stored], timesteps: Optional[str],
         forced: bool) -> list[tuple[str, Answer]]:
    """identify's reader: every cos/sin pair and inv_freq vector of a file (forced: its one
    array, a vector or cos and sin stacked)."""
    out = []
    for name, entry in names.items():
        if COS.search(name):
            out.append((name, _pair(name, entry, names)))
        elif SIN.search(name) and _partner(name, "cos") not in names:
            raise UsageError(f"{entry.source} holds {name!r} but no {_partner(name, 'cos')!r}: a "
                             "rotary cache needs both cos and sin, of the same shape")
        elif INV_FREQ.search(name):
            values, dtype = read_array(entry)
            out.append((name, from_inv_freq(values, entry.source, dtype)))
    if out or not forced:
        return out
    if len(names) == 1:                               # one array: a vector, or cos and sin stacked
        entry = next(iter(names.values()))
        values, dtype = read_array(entry)
        while values.ndim > 1 and values.shape[0] == 1:
            values = values[0]
        if values.ndim == 1:
            return [(entry.name, from_inv_freq(values, entry.source, dtype))]
        if values.ndim == 3 and values.shape[0] == 2:
            return [(entry.name, from_pair(values[0], values[1], entry.source, dtype))]
    raise UsageError("--kind rotary needs arrays named cos and sin (or cos_cached / sin_cached), "
                     "an inv_freq vector, or one array: a vector, or cos and sin stacked [2, L, D]; "
                     f"found {sorted(names)}")


def _partner(name: str, function: str) -> str:
    """The name of the other half of a cos/sin pair: `a.cos_cached` -> `a.sin_cached`."""
    return FUNCTION.sub(lambda m: m.group(1) + m.group(2) + function + m.group(4), name)


def _pair(name: str, entry: Stored, names: dict[str, Stored]) -> Answer:
    sin_name = _partner(name, "sin")
    if sin_name not in names:
        raise UsageError(f"{entry.source} holds {name!r} but no {sin_name!r}: a rotary cache "
                         "needs both cos and sin, of the same shape")
    cos, dtype = read_array(entry)
    sin, _ = read_array(names[sin_name])
    if cos.shape != sin.shape:
        raise UsageError(f"{name!r} has shape {cos.shape} but {sin_name!r} has {sin.shape}: a "
                         f"rotary cache's cos and sin have the same shape ({entry.source})")
    cos = matrix(cos, entry.source, name)
    sin = matrix(sin, names[sin_name].source, sin_name)
    return from_pair(cos, sin, f"{entry.source} + {sin_name}", dtype)
