"""Inverse frequencies and the cos/sin scale of every rope_type, in float64.

Written after transformers' `modeling_rope_utils` (5.23), formula for formula, so a cache built
from a spec is the cache a model of that config uses. `dim` is the rotated width `rot`:

    default   inv_k = 1 / base ** (2k / dim)
    linear    inv_k / factor
    dynamic   base' = base * (factor * s / mpe - (factor - 1)) ** (dim / (dim - 2)), s = max(seq, mpe)
    yarn      blend of inv_k (extrapolation) and inv_k / factor (interpolation) by a linear ramp
              between the correction dims of beta_fast and beta_slow rotations over ompe;
              scale = attention_factor, or 0.1 ln(factor) + 1 (mscale ratio when both given)
    llama3    wavelength 2 pi / inv_k above ompe / low_freq_factor: / factor; below
              ompe / high_freq_factor: unchanged; between: smoothed
    longrope  inv_k / ext_k, ext = long_factor if seq > ompe else short_factor;
              scale = attention_factor, or sqrt(1 + ln(factor) / ln(ompe)) when factor > 1

`seq` is offset + length, the sequence length the model's dynamic updates see.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _exponents(spec: Any) -> np.ndarray:
    """2k / dim for k = 0 .. n_freq-1."""
    return np.arange(0, spec.rot, 2, dtype=np.float64) / spec.rot


def _plain(base: float, spec: Any) -> np.ndarray:
    return 1.0 / base ** _exponents(spec)


def _dynamic(spec: Any) -> np.ndarray:
    mpe = spec.max_position_embeddings
    seq = max(spec.seq_len, mpe)
    dim = spec.rot
    base = spec.base * ((spec.factor * seq / mpe) - (spec.factor - 1)) ** (dim / (dim - 2))
    return _plain(base, spec)


def yarn_correction_range(spec: Any) -> tuple[float, float]:
    """The (low, high) dims between which yarn ramps from extrapolation to interpolation."""
    dim, base, ompe = spec.rot, spec.base, spec.original_max_position_embeddings

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(ompe / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(spec.beta_fast), correction_dim(spec.beta_slow)
    if spec.truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, dim - 1)


def _yarn(spec: Any) -> np.ndarray:
    pos_freqs = spec.base ** _exponents(spec)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (spec.factor * pos_freqs)
    low, high = yarn_correction_range(spec)
    if low == high:
        high += 0.001   # transformers' guard against a zero-width ramp
    ramp = np.clip((np.arange(spec.n_freq, dtype=np.float64) - low) / (high - low), 0, 1)
    keep = 1 - ramp      # the share of extrapolation
    return interpolation * (1 - keep) + extrapolation * keep


def _llama3(spec: Any) -> np.ndarray:
    inv = _plain(spec.base, spec)
    ompe, factor = spec.original_max_position_embeddings, spec.factor
    low_wavelen = ompe / spec.low_freq_factor
    high_wavelen = ompe / spec.high_freq_factor
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (ompe / wavelen - spec.low_freq_factor) / (spec.high_freq_factor - spec.low_freq_factor)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled)


def _longrope(spec: Any) -> np.ndarray:
    long = spec.seq_len > spec.original_max_position_embeddings
    ext = np.asarray(spec.long_factor if long else spec.short_factor, dtype=np.float64)
    return 1.0 / (ext * spec.base ** _exponents(spec))


_INV_FREQ = {
    "default": lambda spec: _plain(spec.base, spec),
    "linear": lambda spec: _plain(spec.base, spec) / spec.factor,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope,
}


def inv_freq(spec: Any) -> np.ndarray:
    """float64 `[n_freq]` inverse frequencies of a RotarySpec, its rope_type's scaling applied."""
    return _INV_FREQ[spec.rope_type](spec)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def attention_scaling(spec: Any) -> float:
    """The factor cos and sin are multiplied by: 1.0 except for yarn and longrope."""
    if spec.rope_type == "yarn":
        if spec.attention_factor is not None:
            return spec.attention_factor
        if spec.mscale and spec.mscale_all_dim:   # transformers tests truthiness: 0 means unset
            return _yarn_mscale(spec.factor, spec.mscale) / _yarn_mscale(spec.factor, spec.mscale_all_dim)
        return _yarn_mscale(spec.factor)
    if spec.rope_type == "longrope":
        if spec.attention_factor is not None:
            return spec.attention_factor
        if spec.factor <= 1.0:
            return 1.0
        return math.sqrt(1 + math.log(spec.factor) / math.log(spec.original_max_position_embeddings))
    return 1.0
