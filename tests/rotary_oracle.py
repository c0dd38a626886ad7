"""An oracle for rotary caches that shares no code with what it judges.

The published formulas written down again, evaluated in mpmath at 50 digits. A spec is read only
as a record of its fields (none of its derived members: `rot`, `n_freq`, `inv_freq()` and
`attention_scaling` are code under test), and nothing of the harness is imported.

    dim = rotary_dim or head_dim, k = 0 .. dim/2 - 1, theta = (offset + row) * inv_k
    default   inv_k = base ** (-2k / dim)
    linear    inv_k / factor                                             (Chen et al. 2023)
    dynamic   base * (factor * S / mpe - factor + 1) ** (dim / (dim - 2)), S = max(offset+length, mpe)
    yarn      ramp r_k = clamp((k - lo) / (hi - lo), 0, 1) between the dims where a wave turns
              beta_fast and beta_slow times over ompe; inv_k = base^(-2k/dim) * ((1 - r_k) + r_k / factor);
              scale 0.1 ln(factor) + 1 (or its mscale ratio, or attention_factor)   (Peng et al. 2023)
    llama3    by wavelength 2 pi / inv_k: short (< ompe/high) kept, long (> ompe/low) / factor,
              between: (1 - s) inv / factor + s inv, s = (ompe / wavelength - low) / (high - low)
    longrope  inv_k / lambda_k, lambda = long_factor when offset+length > ompe else short_factor;
              scale sqrt(1 + ln(factor) / ln(ompe)) when factor > 1            (Ding et al. 2024)
    columns   half: cos(theta_{j mod dim/2}); interleaved: cos(theta_{floor(j/2)})
    apply     pairs (x_a, x_b) -> (x_a c - x_b s, x_b c + x_a s); half pairs j with j + dim/2,
              interleaved 2i with 2i+1; dims past `dim` unchanged
"""

from __future__ import annotations

import mpmath

DIGITS = 50
mpf = mpmath.mpf


def rotated_width(spec) -> int:
    return spec.rotary_dim if spec.rotary_dim is not None else spec.head_dim


def _plain(base, k: int, dim: int):
    return mpmath.power(mpf(base), -mpf(2 * k) / dim)


def _yarn(spec, k: int, dim: int):
    def turns_dim(turns):
        return dim * mpmath.log(mpf(spec.original_max_position_embeddings) / (turns * 2 * mpmath.pi)) / (
            2 * mpmath.log(mpf(spec.base)))

    lo, hi = turns_dim(mpf(spec.beta_fast)), turns_dim(mpf(spec.beta_slow))
    if spec.truncate:
        lo, hi = mpmath.floor(lo), mpmath.ceil(hi)
    lo, hi = max(lo, mpf(0)), min(hi, mpf(dim - 1))
    if lo == hi:
        hi += mpf("0.001")
    ramp = min(max((k - lo) / (hi - lo), mpf(0)), mpf(1))
    return _plain(spec.base, k, dim) * ((1 - ramp) + ramp / mpf(spec.factor))


def _llama3(spec, k: int, dim: int):
    inv = _plain(spec.base, k, dim)
    ompe, factor = mpf(spec.original_max_position_embeddings), mpf(spec.factor)
    low, high = mpf(spec.low_freq_factor), mpf(spec.high_freq_factor)
    wavelength = 2 * mpmath.pi / inv
    if wavelength < ompe / high:
        return inv
    if wavelength > ompe / low:
        return inv / factor
    s = (ompe / wavelength - low) / (high - low)
    return (1 - s) * inv / factor + s * inv


def inverse_frequency(spec, k: int):
    """inv_freq of frequency k, to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        dim = rotated_width(spec)
        kind = spec.rope_type
        if kind == "default":
            return _plain(spec.base, k, dim)
        if kind == "linear":
            return _plain(spec.base, k, dim) / mpf(spec.factor)
        if kind == "dynamic":
            mpe, factor = spec.max_position_embeddings, mpf(spec.factor)
            seen = max(spec.offset + spec.length, mpe)
            base = mpf(spec.base) * (factor * seen / mpe - factor + 1) ** (mpf(dim) / (dim - 2))
            return _plain(base, k, dim)
        if kind == "yarn":
            return _yarn(spec, k, dim)
        if kind == "llama3":
            return _llama3(spec, k, dim)
        if kind == "longrope":
            long = spec.offset + spec.length > spec.original_max_position_embeddings
            lam = (spec.long_factor if long else spec.short_factor)[k]
            return _plain(spec.base, k, dim) / mpf(lam)
        raise ValueError(f"the oracle knows no rope_type {kind!r}")


def _mscale(scale, m):
    return mpf(1) if scale <= 1 else mpf("0.1") * m * mpmath.log(scale) + 1


def cos_sin_scale(spec):
    """What multiplies cos and sin, to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        if spec.rope_type not in ("yarn", "longrope"):
            return mpf(1)
        if spec.attention_factor is not None:
            return mpf(spec.attention_factor)
        factor = mpf(spec.factor)
        if spec.rope_type == "yarn":
            if spec.mscale and spec.mscale_all_dim:
                return _mscale(factor, mpf(spec.mscale)) / _mscale(factor, mpf(spec.mscale_all_dim))
            return _mscale(factor, mpf(1))
        if factor <= 1:
            return mpf(1)
        return mpmath.sqrt(1 + mpmath.log(factor) / mpmath.log(spec.original_max_position_embeddings))


def column_frequency(spec, col: int) -> int:
    """The frequency index cache column `col` holds."""
    half = rotated_width(spec) // 2
    return col % half if spec.layout == "half" else col // 2


def angle(spec, row: int, col: int):
    with mpmath.workdps(DIGITS):
        return (spec.offset + row) * inverse_frequency(spec, column_frequency(spec, col))


def cache_element(spec, part: str, row: int, col: int):
    """cos or sin ("cos" / "sin") of the cache at [row, col], scaled, to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        fn = mpmath.cos if part == "cos" else mpmath.sin
        return cos_sin_scale(spec) * fn(angle(spec, row, col))


def _partner(spec, col: int) -> tuple[int, int]:
    """(the column paired with `col`, +1 if `col` is the pair's first member else -1)."""
    dim = rotated_width(spec)
    if spec.layout == "half":
        half = dim // 2
        return (col + half, 1) if col < half else (col - half, -1)
    return (col + 1, 1) if col % 2 == 0 else (col - 1, -1)


def rotated_row(spec, x, position: int) -> list:
    """One head's row `x` (head_dim values) rotated at `position`, to DIGITS digits."""
    with mpmath.workdps(DIGITS):
        dim, out = rotated_width(spec), []
        row = position - spec.offset
        for col, value in enumerate(x):
            if col >= dim:
                out.append(mpf(float(value)))
                continue
            other, first = _partner(spec, col)
            c, s = cache_element(spec, "cos", row, col), cache_element(spec, "sin", row, col)
            pair = mpf(float(x[other]))
            # first member: a c - b s; second: b c + a s (here `value` is b and `pair` is a)
            out.append(mpf(float(value)) * c - pair * s if first == 1 else mpf(float(value)) * c + pair * s)
        return out
