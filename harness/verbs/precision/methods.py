"""Small reference versions of the ways to compute a sin/cos table in a narrow dtype.

These are for measuring error, not speed (the fast production versions live
in impls/). Each method is written once against a tiny `ArrayOps` record, so
NumPy and torch run the same steps:

- `direct`: positions, frequencies, angles and sin/cos all in the dtype - what
  most code does. The angle p * inv_freq is rounded to the dtype, so the error
  grows with p (float32: ~eps * p; float16 cannot even hold p past 65504).
- `f64-angles`: angles in float64, reduced modulo 2 pi, cast once; sin/cos in
  the dtype. The reduced angle is small, so its rounding no longer grows with p.
- `f64-table`: everything in float64, the finished table cast once: the best
  the dtype can hold (half an ulp) - and the most float64 work.
- `angle-addition`: p = q * BLOCK + r; sin/cos of the coarse angle q * BLOCK *
  inv_freq and of the fine angle r * inv_freq come from float64 tables cast to
  the dtype, then sin(a + b) = sin a cos b + cos a sin b in the dtype. A few
  ulps at any p, with float64 work only on the small base tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

BLOCK = 256
TWO_PI = 2.0 * math.pi
Pair = tuple[np.ndarray, np.ndarray]   # (sin, cos) as float64 NumPy arrays [n_pos, n_freq]


@dataclass(frozen=True)
class ArrayOps:
    """The few operations the methods need, for one array library."""

    name: str
    dtypes: tuple[str, ...]
    cast: Callable[[np.ndarray, str], Any]      # float64 NumPy -> backend array in dtype
    sin: Callable[[Any], Any]
    cos: Callable[[Any], Any]
    exp: Callable[[Any], Any]
    to_float64: Callable[[Any], np.ndarray]


def numpy_ops() -> ArrayOps:
    return ArrayOps("numpy", ("float16", "float32"), lambda x, d: x.astype(d), np.sin, np.cos,
                   np.exp, lambda x: np.asarray(x, dtype=np.float64))


def torch_ops() -> Optional[ArrayOps]:
    """None when torch is not installed (the study then runs NumPy only)."""
    try:
        import torch
    except ImportError:
        return None
    return ArrayOps("torch", ("float16", "bfloat16", "float32"),
                   lambda x, d: torch.from_numpy(np.ascontiguousarray(x)).to(getattr(torch, d)),
                   torch.sin, torch.cos, torch.exp, lambda t: t.double().numpy())


def array_ops() -> list[ArrayOps]:
    return [b for b in (numpy_ops(), torch_ops()) if b is not None]


def direct(be: ArrayOps, positions: np.ndarray, base: float, denominator: float,
           n_freq: int, dtype: str) -> Pair:
    p = be.cast(positions.astype(np.float64), dtype)
    k = be.cast(np.arange(n_freq, dtype=np.float64), dtype)
    rate = be.cast(np.array(-math.log(base) / denominator), dtype)
    theta = p[:, None] * be.exp(k * rate)[None, :]
    return be.to_float64(be.sin(theta)), be.to_float64(be.cos(theta))


def f64_angles(be: ArrayOps, positions: np.ndarray, base: float, denominator: float,
               n_freq: int, dtype: str) -> Pair:
    theta = np.outer(positions.astype(np.float64), _inv_freq(base, denominator, n_freq))
    reduced = be.cast(np.mod(theta + math.pi, TWO_PI) - math.pi, dtype)
    return be.to_float64(be.sin(reduced)), be.to_float64(be.cos(reduced))


def f64_table(be: ArrayOps, positions: np.ndarray, base: float, denominator: float,
              n_freq: int, dtype: str) -> Pair:
    theta = np.outer(positions.astype(np.float64), _inv_freq(base, denominator, n_freq))
    return (be.to_float64(be.cast(np.sin(theta), dtype)),
            be.to_float64(be.cast(np.cos(theta), dtype)))


def angle_addition(be: ArrayOps, positions: np.ndarray, base: float, denominator: float,
                   n_freq: int, dtype: str) -> Pair:
    inv = _inv_freq(base, denominator, n_freq)
    coarse = np.outer((positions // BLOCK * BLOCK).astype(np.float64), inv)
    fine = np.outer((positions % BLOCK).astype(np.float64), inv)
    sa, ca = be.cast(np.sin(coarse), dtype), be.cast(np.cos(coarse), dtype)
    sb, cb = be.cast(np.sin(fine), dtype), be.cast(np.cos(fine), dtype)
    return be.to_float64(sa * cb + ca * sb), be.to_float64(ca * cb - sa * sb)


def _inv_freq(base: float, denominator: float, n_freq: int) -> np.ndarray:
    return np.power(base, -np.arange(n_freq, dtype=np.float64) / denominator)


METHODS: dict[str, Callable[..., Pair]] = {
    "direct": direct,
    "f64-angles": f64_angles,
    "angle-addition": angle_addition,
    "f64-table": f64_table,
}
