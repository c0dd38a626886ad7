"""Rotary apply in bfloat16: q and k rotated with a bfloat16 cache vs a float32 cache.

A bf16 model usually casts the cache to bf16 and rotates in bf16 (`q * cos + rotate_half(q) *
sin`, every product and the sum rounded to bf16); the alternative keeps the cache in float32,
rotates in float32 and rounds the result once. q and k are the kind's own apply inputs (normals
already exact in bf16), so the error measured is the rotation's, judged against the float64
rotation by the exact cache (`apply_reference`). The error is relative to max(|exact|, 1): an
output of 3 cannot be nearer than its own bf16 spacing.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.rotary.apply import APPLY, apply_inputs
from harness.core.kinds.rotary.reference import apply_reference
from harness.verbs.precision.common import Point, numpy64, tensor
from harness.verbs.precision import rotary
from harness.verbs.precision.rotary import f32_angles, f64_reduced, probe
from harness.verbs.precision.study import Study
from harness.verbs.precision.verdicts import Axis

#: one sequence (the error is per position) of as many heads as bench times
BATCH, HEADS = 1, APPLY.bench_heads
#: (name, cache method, the dtype the cache is held and the rotation done in)
APPLY_METHODS = (
    ("bf16 cache, f32-angles", f32_angles, "bfloat16"),    # transformers' Llama in bf16
    ("bf16 cache, f64-reduced", f64_reduced, "bfloat16"),
    ("f32 cache, f64-reduced", f64_reduced, "float32"),
)


def rotate(x, cos, sin):
    """rotate_half's rotation: x * cos + cat(-x2, x1) * sin, in x's dtype."""
    import torch

    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def applied(spec, method, work_dtype: str, q: np.ndarray, k: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """q and k rotated by a `method` cache at positions `rows`, computed in `work_dtype` and
    returned rounded to bfloat16 (as float64)."""
    import torch

    p = np.arange(spec.offset, spec.offset + spec.length, dtype=np.int64)
    cos, sin = (np.concatenate([c, c], axis=-1)[rows - spec.offset]
                for c in method(p, spec.inv_freq(), spec.attention_scaling, work_dtype))
    cos, sin = tensor(cos, work_dtype), tensor(sin, work_dtype)
    return np.stack([numpy64(rotate(tensor(x, work_dtype), cos, sin).to(torch.bfloat16)) for x in (q, k)])


def measure(starts: list[int]) -> list[Point]:
    points = []
    for start in starts:
        spec = probe(start).replace(dtype="bfloat16")
        q, k, rows = apply_inputs(spec, BATCH, HEADS)
        exact = apply_reference(spec, q, k, rows)
        scale = np.maximum(np.abs(exact), 1.0)
        for name, method, work in APPLY_METHODS:
            got = applied(spec, method, work, q, k, rows)
            err = float(np.max(np.abs(got - exact) / scale)) if np.isfinite(got).all() else np.inf
            points.append(Point("rotary", "apply", name, name, "bfloat16", start, err))
    return points


STUDIES = (
    Study("rotary", "apply", __name__, rotary.STARTS, rotary.STARTS_QUICK,
          "Rotary apply in bfloat16", Axis("position", rotary.WINDOW - 1), rotary.SHOWN,
          f"q and k [{BATCH}, {HEADS}, {rotary.WINDOW}, {rotary.HEAD_DIM}] (exact in bfloat16) "
          f"rotated at positions p .. p + {rotary.WINDOW - 1}, result in bfloat16; largest "
          "|error| / max(|exact|, 1) against the float64 rotation by the exact cache. Methods: "
          "harness/verbs/precision/rotary_apply.py."),
)
