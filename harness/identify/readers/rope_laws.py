"""Readings of a rotary inverse-frequency vector: which rope_type, with which parameters.

Every rope_type starts from the plain log-linear law `base ** (-2k / rot)` and bends it:
linear divides every frequency by factor, llama3 and yarn divide the slow ones (the tail) and
leave the fast ones (the head) alone, with a ramp between them that is linear in frequency
(llama3) or in k (yarn); longrope divides frequency k by its own factor. So the head gives the
base, the tail the factor, the ramp the rest. Several parameters trade against each other
(llama3's original_max_position_embeddings, low_freq_factor and high_freq_factor scale
together; yarn's betas and original_max_position_embeddings only show through two integer
ramp ends): the readings come simplest first and the caller keeps the first that rebuilds the
vector. Each reading is the rope fields of a RotarySpec (no length, head_dim or offset).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from harness.identify.law import nice_values, significant_digits

Fields = dict
#: Bases models ship with, tried before the measured one's round readings.
COMMON_BASES = (10000.0, 500000.0, 1000000.0, 100000.0, 50000.0, 5000000.0, 10000000.0, 1000.0)
#: original_max_position_embeddings models ship with (powers of two first).
COMMON_OMPE = tuple(2 ** e for e in range(6, 18)) + (4000, 100000)
#: Relative spread of a measured frequency that still counts as the law (a stored float32 vector
#: is off by a few 1e-7; one measured from a cache by more, which the caller says).
HEAD_TOL = 1e-4


def plain(base: float, n: int) -> np.ndarray:
    """`base ** (-2k / rot)` for k < n (rot = 2n), as the spec computes it."""
    return 1.0 / base ** (np.arange(0, 2 * n, 2, dtype=np.float64) / (2 * n))


def readings(omega: np.ndarray, rel_err: float, amplitude: Optional[float] = 1.0,
             amp_err: float = 0.0) -> Iterator[tuple[Fields, str]]:
    """(rope fields, note) for `omega`, simplest first: default, linear, llama3, yarn, then
    longrope's per-dimension factors (which fit any vector). `amplitude` (relative error
    `amp_err`) None: not known (an inv_freq vector), so no attention factor is named."""
    n = len(omega)
    tol = max(rel_err, 1e-12)
    bases = _bases(omega, tol)
    amp = None if amplitude is None else Amplitude(amplitude, max(amp_err, 1e-12))
    scaled = amp is not None and not amp.near(1.0)
    for base in bases:
        ratio = plain(base, n) / omega        # 1 where untouched, factor where divided
        if not scaled:
            yield from _default_or_linear(base, ratio, tol, n)
            yield from _llama3(base, ratio, tol, n)
        yield from _yarn(base, ratio, tol, n, amp)
    yield from _longrope(COMMON_BASES[0], omega, amp)


@dataclass(frozen=True)
class Amplitude:
    """The measured attention scaling and its relative error bar."""

    value: float
    err: float

    def near(self, x: float) -> bool:
        return abs(self.value - x) <= 8 * self.err * x

    def readings(self) -> list[float]:
        """Round values within the error bar, then the measured one."""
        return list(dict.fromkeys(nice_values(self.value, 8 * self.err) + [self.value]))


def _bases(omega: np.ndarray, tol: float) -> list[float]:
    """Bases the head (the fast frequencies, k >= 1, left alone by every scaling but linear and
    longrope) or the tail's slope imply, round readings first."""
    n = len(omega)
    if n < 2:
        return list(COMMON_BASES[:1])
    k = np.arange(1, n)
    per_k = np.exp(-np.log(omega[1:] / omega[0]) * n / k)      # base if k and 0 share the law
    found = [float(per_k[0])]
    agree = np.abs(np.log(per_k / per_k[0])) * k / n <= 4 * tol
    head = int(np.argmin(agree)) if not agree.all() else len(agree)
    if head > 1:
        found.append(float(np.median(per_k[:head])))
    if n >= 3:                                                  # the tail's slope
        slope = (math.log(omega[-1]) - math.log(omega[-2])) * n
        found.append(math.exp(-slope))
    out: list[float] = []
    for raw in found:
        if not (raw > 1 and math.isfinite(raw)):
            continue
        log_tol = 8 * tol * n
        out += [b for b in COMMON_BASES if abs(math.log(b / raw)) <= log_tol]
        out += nice_values(raw, log_tol)
        out.append(raw)
    return list(dict.fromkeys(out))


def _factors(raw: float, tol: float) -> list[float]:
    if not (raw > 0 and math.isfinite(raw)):
        return []
    return list(dict.fromkeys(nice_values(raw, 8 * tol) + [raw]))


def _default_or_linear(base: float, ratio: np.ndarray, tol: float,
                       n: int) -> Iterator[tuple[Fields, str]]:
    spread = float(np.max(np.abs(np.log(ratio / ratio[0]))))
    if spread > 8 * tol:
        return
    if abs(math.log(ratio[0])) <= 8 * tol:
        note = "" if significant_digits(base) <= 3 else (
            f"base {base:g} is not a round number: rope_type 'dynamic' (NTK) gives a log-linear "
            "inv_freq with a rescaled base too (base * (factor * seq / max_position_embeddings - "
            "factor + 1) ** (rot / (rot - 2))); this reading is the plain one")
        if n == 1:
            note = "one frequency (rotary_dim 2) cannot tell the base: the default is named"
        yield {"base": base}, note
        return
    for factor in _factors(float(np.median(ratio)), tol):
        yield ({"base": base, "rope_type": "linear", "factor": factor},
               f"every frequency is divided by {factor:g}: rope_type 'linear' (position "
               f"interpolation); the same vector as base {base:g} with positions divided by the "
               "factor")


def _tail_factor(ratio: np.ndarray, tol: float) -> Optional[float]:
    """The factor the slowest frequencies are divided by, when they are (> 1 and flat)."""
    last = float(ratio[-1])
    if last <= 1 + 8 * tol:
        return None
    return last


def _llama3(base: float, ratio: np.ndarray, tol: float, n: int) -> Iterator[tuple[Fields, str]]:
    """Middle frequencies: 1/ratio = (1 - s)/factor + s with s linear in plain(base) / 2 pi:
    s = ompe / wavelen / (hff - lff) - lff / (hff - lff). One of the three is free: lff = 1
    first (Llama 3.1's), then the common sets."""
    raw = _tail_factor(ratio, tol)
    if raw is None:
        return
    inv = plain(base, n)
    for factor in _factors(raw, tol):
        s = (1 / ratio - 1 / factor) / (1 - 1 / factor)
        middle = (s > 16 * tol) & (s < 1 - 16 * tol)
        sets: list[tuple[int, float, float]] = []
        if middle.sum() >= 2:
            a, c = np.polyfit(inv[middle] / (2 * math.pi), s[middle], 1)
            if c < 0 and a > 0:
                for lff in (1.0, 2.0, 0.5, 4.0):
                    hff, ompe = lff - lff / c, -a * lff / c
                    for h in _factors(hff, tol * 1e2):
                        sets.append((int(round(ompe)), lff, h))
        sets += [(o, 1.0, 4.0) for o in COMMON_OMPE]
        for ompe, lff, hff in sets:
            if ompe >= 2 and hff > lff:
                yield ({"base": base, "rope_type": "llama3", "factor": factor,
                        "original_max_position_embeddings": ompe, "low_freq_factor": lff,
                        "high_freq_factor": hff},
                       "llama3's original_max_position_embeddings, low_freq_factor and "
                       "high_freq_factor are known only up to a common factor (the same "
                       "frequencies when all three are multiplied by one number)")


def _yarn(base: float, ratio: np.ndarray, tol: float, n: int,
          amp: Optional[Amplitude]) -> Iterator[tuple[Fields, str]]:
    """The ramp is linear in k between low and high, the correction dims of beta_fast and
    beta_slow rotations over ompe: `dim * ln(ompe / (2 pi beta)) / (2 ln base)`."""
    raw = _tail_factor(ratio, tol)
    if raw is None:
        return
    rot = 2 * n
    for factor in _factors(raw, tol):
        ramp = (1 - 1 / ratio) / (1 - 1 / factor)
        for ompe in _yarn_ompe(ramp, base, rot, tol):
            for truncate, attention in itertools.product((True, False), _attention(factor, amp)):
                fields = {"base": base, "rope_type": "yarn", "factor": factor,
                          "original_max_position_embeddings": ompe, "truncate": truncate}
                if attention is not None:
                    fields["attention_factor"] = attention
                yield fields, ("yarn's beta_fast and beta_slow are read at their defaults "
                               "(32, 1): other betas with another original_max_position_embeddings "
                               "can give the same ramp")


def _yarn_ompe(ramp: np.ndarray, base: float, rot: int, tol: float) -> list[int]:
    """Integers whose default-beta correction dims put the ramp where it is."""
    k = np.arange(len(ramp), dtype=np.float64)
    inner = (ramp > 16 * tol) & (ramp < 1 - 16 * tol)
    ends: list[float] = []
    if inner.sum() >= 2:
        slope, icpt = np.polyfit(k[inner], ramp[inner], 1)
        low, high = -icpt / slope, (1 - icpt) / slope
        ends = [low, high]
    else:
        below = np.flatnonzero(ramp <= 16 * tol)
        above = np.flatnonzero(ramp >= 1 - 16 * tol)
        ends = [float(below[-1]) if len(below) else 0.0, float(above[0]) if len(above) else rot - 1]
    scale = 2 * math.log(base) / rot
    out: list[float] = []
    for end, beta in zip(ends, (32.0, 1.0)):
        for dim in (end, math.floor(end), math.ceil(end), end - 1, end + 1):
            out.append(math.exp(scale * dim + math.log(2 * math.pi * beta)))
    found = [o for o in COMMON_OMPE if any(abs(math.log(o / x)) < 0.6 for x in out)]
    found += [int(round(x)) for x in out if x >= 2]
    return list(dict.fromkeys(found))


def _attention(factor: float, amp: Optional[Amplitude]) -> list[Optional[float]]:
    """[None] when the amplitude is yarn's default 0.1 ln(factor) + 1 (or unknown), else its
    readings."""
    default = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    if amp is None or amp.near(default):
        return [None]
    return list(amp.readings())


def _longrope(base: float, omega: np.ndarray,
              amp: Optional[Amplitude]) -> Iterator[tuple[Fields, str]]:
    ext = tuple(float(x) for x in plain(base, len(omega)) / omega)
    fields: Fields = {"base": base, "rope_type": "longrope", "short_factor": ext, "long_factor": ext}
    scales = [None] if amp is None or amp.near(1.0) else amp.readings()
    for scale in scales:
        yield ({**fields, "attention_factor": scale} if scale else fields), (
            "per-dimension factors (rope_type 'longrope'): no simpler law rebuilds these "
            "frequencies; one cache shows one factor list, given as both short_factor and "
            "long_factor, and the base is a reading (the factors absorb any other)")
