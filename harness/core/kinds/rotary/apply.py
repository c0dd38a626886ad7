"""The apply workload's inputs and what it is judged by.

q and k are deterministic normals rounded to the spec's dtype (so every implementation starts
from the same exactly representable values) and carried as float32, or float64 for a float64
spec; positions are a deterministic shuffle of offset .. offset+length-1, so a cache indexed by
row instead of by position fails.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary.reference import apply_reference
from harness.core.kinds.rotary.spec import RotarySpec
from harness.core.kinds.rotary.tolerance import apply_tolerance

#: The batch and heads apply inputs default to (verify passes its own).
APPLY_BATCH = 2
APPLY_HEADS = 2


def round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def representable(x: np.ndarray, dtype: str) -> np.ndarray:
    """x rounded to `dtype`, as float32 (float64 for a float64 spec): what apply is given."""
    if dtype == "float64":
        return x.astype(np.float64)
    if dtype == "bfloat16":
        return round_to_bfloat16(x.astype(np.float32))
    return x.astype(dtype).astype(np.float32)


def apply_inputs(spec: RotarySpec, batch: int = APPLY_BATCH,
                 heads: int = APPLY_HEADS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, k, positions): q and k `[batch, heads, length, head_dim]`, positions int64 `[length]`."""
    rng = np.random.default_rng(4321)
    shape = (batch, heads, spec.length, spec.head_dim)
    q = representable(rng.standard_normal(shape), spec.dtype)
    k = representable(rng.standard_normal(shape), spec.dtype)
    position_ids = (rng.permutation(spec.length) + spec.offset).astype(np.int64)
    return q, k, position_ids


def apply_expected(spec: RotarySpec, args: tuple, cache: np.ndarray,
                   cache_tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q and k rotated in float64, the allowed error), each `[2, batch, heads, seq, head_dim]`."""
    q, k, position_ids = args
    expected = apply_reference(spec, q, k, position_ids, cache)
    return expected, apply_tolerance(spec, q, k, position_ids, cache, cache_tol)


def apply_shape(spec: RotarySpec, batch: int, heads: int) -> tuple[int, ...]:
    return (2, batch, heads, spec.length, spec.head_dim)
