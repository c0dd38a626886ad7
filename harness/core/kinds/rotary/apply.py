"""The apply workload (`APPLY`): its inputs, what it is judged by, and its batch and heads.

q and k are deterministic normals rounded to the spec's dtype (so every implementation starts
from the same exactly representable values) and carried as float32, or float64 for a float64
spec, in the spec's qk_layout, k with `kv_heads` heads where it is set (forms.py). Positions
`[seq]` are a deterministic shuffle of offset .. offset+length-1, so a cache indexed by row
instead of by position fails; `[batch, seq]` ids give each sequence its own: that shuffle, two
packed sequences each starting again at offset, a left-padded one (the pads at offset), so an
implementation that uses one sequence's positions for all fails.

Whatever form they are handed over in, the results are compared heads first with k's heads
repeated to q's (`reference.canonical`): `[2, batch, q_heads, seq, head_dim]`.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from harness.core.kinds import PASSES, Arrangement, Workload
from harness.core.kinds.rotary.forms import ApplyForms, describe_case, is_apply_form
from harness.core.kinds.rotary.reference import apply_reference, canonical
from harness.core.kinds.rotary.spec import RotarySpec
from harness.core.kinds.rotary.tolerance import apply_tolerance


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


def q_heads(spec: RotarySpec, heads: int) -> int:
    """q's heads for a workload's `heads`: that many, or with kv_heads set a multiple of them,
    at least twice (so k always has fewer heads than q)."""
    if spec.kv_heads is None:
        return heads
    return spec.kv_heads * max(2, math.ceil(heads / spec.kv_heads))


def qk_shapes(spec: RotarySpec, batch: int, heads: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shapes of q and k as handed over (and returned), in the spec's qk_layout."""
    hq = q_heads(spec, heads)
    hk = hq if spec.kv_heads is None else spec.kv_heads
    if spec.qk_layout == "bshd":
        return (batch, spec.length, hq, spec.head_dim), (batch, spec.length, hk, spec.head_dim)
    return (batch, hq, spec.length, spec.head_dim), (batch, hk, spec.length, spec.head_dim)


def position_ids(spec: RotarySpec, batch: int, rng: np.random.Generator) -> np.ndarray:
    """int64 `[seq]` (a shuffle) or, for position_ids="batch", `[batch, seq]`: the shuffle, two
    packed sequences, a left-padded one, then more shuffles."""
    n, start = spec.length, spec.offset
    shuffle = rng.permutation(n) + start
    if spec.position_ids == "seq":
        return shuffle.astype(np.int64)
    packed = np.concatenate([np.arange(n // 3), np.arange(n - n // 3)]) + start
    pad = n // 4
    left_padded = np.concatenate([np.zeros(pad, dtype=np.int64), np.arange(n - pad)]) + start
    rows = [shuffle, packed, left_padded]
    rows += [rng.permutation(n) + start for _ in range(batch - len(rows))]
    return np.stack(rows[:batch]).astype(np.int64)


def apply_inputs(spec: RotarySpec, batch: Optional[int] = None,
                 heads: Optional[int] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, k, position_ids) in the spec's form: by default q and k `[batch, heads, length,
    head_dim]` and int64 positions `[length]`, verify's batch and heads (`APPLY`)."""
    batch = APPLY.verify_batch if batch is None else batch
    heads = APPLY.verify_heads if heads is None else heads
    rng = np.random.default_rng(4321)
    q_shape, k_shape = qk_shapes(spec, batch, heads)
    q = representable(rng.standard_normal(q_shape), spec.dtype)
    k = representable(rng.standard_normal(k_shape), spec.dtype)
    return q, k, position_ids(spec, batch, rng)


def apply_expected(spec: RotarySpec, args: tuple, cache: np.ndarray,
                   cache_tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q and k rotated in float64, the allowed error), each `[2, batch, q_heads, seq, head_dim]`."""
    q, k, ids = args
    expected = apply_reference(spec, q, k, ids, cache)
    return expected, apply_tolerance(spec, q, k, ids, cache, cache_tol)


def apply_shape(spec: RotarySpec, batch: int, heads: int) -> tuple[int, ...]:
    """The compared shape: q and k heads first, k's heads repeated to q's, stacked."""
    return (2, batch, q_heads(spec, heads), spec.length, spec.head_dim)


def apply_arrangement(spec: RotarySpec, batch: int, heads: int) -> Arrangement:
    """q and k as returned (the spec's layout, k's own heads), and how they are compared."""
    return Arrangement(qk_shapes(spec, batch, heads), lambda parts: canonical(spec, *parts))


def _apply_takes(spec: RotarySpec, forms: ApplyForms) -> Optional[str]:
    return forms.why_not(spec)


def _apply_case(spec: RotarySpec) -> Optional[str]:
    return f"this case: {describe_case(spec)}" if is_apply_form(spec) else None


APPLY = Workload(
    "apply", shape=apply_shape, parts=("q", "k"), inputs=apply_inputs, expect=apply_expected,
    batched=True, heads=True, arrange=apply_arrangement, forms=ApplyForms, accepts=_apply_takes,
    forms_of=ApplyForms.taking, input_names=("q", "k", "position_ids"), describe=_apply_case,
    usual=(("cpu", ("rotary-torch-apply-unfused",)), ("cuda", ("rotary-torch-cuda-apply-unfused",))),
    order=3, traffic=PASSES, roof="fastest bare q * 2, k * 2 pass (fresh or recycled memory)",
    verify_batch=2, verify_heads=2, bench_batch=2, bench_heads=4,
    doc="rotate q and k [batch, heads, seq, head_dim] at int64 positions [seq] (or a declared form)")
