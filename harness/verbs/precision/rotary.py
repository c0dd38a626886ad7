"""Rotary cos/sin cache: error vs position for each way real code builds it, and each rope_type.

Long-context models read the cache at positions 10**5 .. 10**6, where the ways differ by orders
of magnitude. The methods (each over the `n_freq` distinct columns, a half-layout cache's cos
and sin, times attention_scaling):

- `f64-reduced`: float64 angles reduced mod 2 pi, one float32 cos/sin (then stored): accurate.
- `f32-angles`: float32 positions times float32 inv_freq, float32 cos/sin - transformers'
  default; the angle's rounding grows like p * 6e-8 rad, the 128k+ context failure.
- `fp16-positions` / `bf16-positions`: positions held in a half dtype (a bf16 `arange` or
  position_ids): bfloat16 integers stop being exact past 256, float16 past 2048.
- `bf16-inv-freq`: inv_freq rebuilt in bfloat16 (DeepSpeed zero.Init casts buffers): a relative
  frequency error of up to 2**-9 that the angle multiplies by p.
- `half-angles`: positions, inv_freq, angles and cos/sin all in the half dtype.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from harness.core import kinds
from harness.core.kinds.rotary.spec import RotarySpec
from harness.verbs.precision.study import Study
from harness.verbs.precision.verdicts import Axis
from harness.verbs.precision.common import (HALF_DTYPES, Point, log_starts, max_error, numpy64, reduced, tensor,
                                                   torch_dtype)

HEAD_DIM = 128
WINDOW = 8
LAST_POSITION = 2**21
#: rope_type -> the scaling fields of a typical long-context config (base 10000 throughout, so
#: only the scaling differs from `default`)
ROPE_CONFIGS: dict[str, dict] = {
    "default": {},
    "linear": {"factor": 8.0},
    "dynamic": {"factor": 8.0, "max_position_embeddings": 4096},
    "yarn": {"factor": 16.0, "original_max_position_embeddings": 4096},
    "llama3": {"factor": 8.0, "original_max_position_embeddings": 8192},
    "longrope": {"factor": 32.0, "original_max_position_embeddings": 4096,
                 "short_factor": (1.0,) * (HEAD_DIM // 2),
                 "long_factor": tuple(np.geomspace(1.0, 32.0, HEAD_DIM // 2).tolist())},
}

Cache = tuple[np.ndarray, np.ndarray]          # float64 (cos, sin) [positions, n_freq]
Method = Callable[[np.ndarray, np.ndarray, float, str], Cache]


def _finish(cos, sin, scale: float, dtype: str) -> Cache:
    """float32 cos/sin times the attention scaling, stored once in `dtype`."""
    return tuple(numpy64((x * scale).to(torch_dtype(dtype))) for x in (cos, sin))


def f64_reduced(p: np.ndarray, inv: np.ndarray, scale: float, dtype: str) -> Cache:
    theta = tensor(reduced(np.outer(p.astype(np.float64), inv)), "float32")
    return _finish(theta.cos(), theta.sin(), scale, dtype)


def f32_angles(p: np.ndarray, inv: np.ndarray, scale: float, dtype: str,
               position_dtype: str = "float32", inv_dtype: str = "float32") -> Cache:
    positions = tensor(p, position_dtype).float()
    theta = positions[:, None] * tensor(inv, inv_dtype).float()[None, :]
    return _finish(theta.cos(), theta.sin(), scale, dtype)


def half_angles(p: np.ndarray, inv: np.ndarray, scale: float, dtype: str) -> Cache:
    theta = tensor(p, dtype)[:, None] * tensor(inv, dtype)[None, :]
    return _finish(theta.cos().float(), theta.sin().float(), scale, dtype)


def _positions_in(half: str) -> Method:
    return lambda p, inv, scale, dtype: f32_angles(p, inv, scale, dtype, position_dtype=half)


def _bf16_inv_freq(p: np.ndarray, inv: np.ndarray, scale: float, dtype: str) -> Cache:
    return f32_angles(p, inv, scale, dtype, inv_dtype="bfloat16")


#: (method, stored dtype) pairs the cache study measures, in the order tables show them
CACHE_METHODS: tuple[tuple[str, Method, str], ...] = (
    ("f64-reduced", f64_reduced, "float32"),
    ("f32-angles", f32_angles, "float32"),
    ("fp16-positions", _positions_in("float16"), "float32"),
    ("bf16-positions", _positions_in("bfloat16"), "float32"),
    ("bf16-inv-freq", _bf16_inv_freq, "float32"),
    *((name, method, dtype) for dtype in HALF_DTYPES
      for name, method in (("f64-reduced", f64_reduced), ("f32-angles", f32_angles),
                           ("half-angles", half_angles))),
)


def probe(start: int, rope_type: str = "default") -> RotarySpec:
    """WINDOW positions from `start` of a HEAD_DIM-wide half-layout cache."""
    return RotarySpec(WINDOW, HEAD_DIM, offset=start, rope_type=rope_type, **ROPE_CONFIGS[rope_type])


def _error(spec: RotarySpec, method: Method, dtype: str) -> float:
    """Largest |error| of cos and sin against the kind's float64 reference."""
    p = np.arange(spec.offset, spec.offset + spec.length, dtype=np.int64)
    with np.errstate(all="ignore"):
        got = method(p, spec.inv_freq(), spec.attention_scaling, dtype)
    ref = kinds.reference(spec)[:, :, :spec.n_freq]        # half layout: columns cat(f, f)
    return max(max_error(got[0], ref[0]), max_error(got[1], ref[1]))


def measure(starts: list[int]) -> list[Point]:
    """The cache methods (default rope_type) and every rope_type's f32-angles and f64-reduced."""
    points = []
    for start in starts:
        spec = probe(start)
        for name, method, dtype in CACHE_METHODS:
            points.append(Point("rotary", "cache", f"{name} {dtype}", name, dtype, start,
                                _error(spec, method, dtype)))
        for rope_type in ROPE_CONFIGS:
            spec = probe(start, rope_type)
            for name, method in (("f32-angles", f32_angles), ("f64-reduced", f64_reduced)):
                points.append(Point("rotary", "rope_type", f"{rope_type} {name}", name, "float32",
                                    start, _error(spec, method, "float32")))
    return points


STARTS = tuple(log_starts(LAST_POSITION, 2))
STARTS_QUICK = tuple(log_starts(LAST_POSITION, 1))
SHOWN = (128, 256, 2048, 65_536, 1_048_576)
STUDIES = (
    Study("rotary", "cache", __name__, STARTS, STARTS_QUICK,
          "Rotary cos/sin cache", Axis("position", WINDOW - 1), SHOWN,
          f"Largest |error| of cos and sin against the float64 reference over {WINDOW} "
          f"consecutive positions starting at p, head_dim {HEAD_DIM}, base 10000, "
          "default rope_type; dtype is the dtype the cache is stored in. Methods: "
          "harness/verbs/precision/rotary.py."),
    Study("rotary", "rope_type", __name__, STARTS, STARTS_QUICK,
          "Rotary cache by rope_type", Axis("position", WINDOW - 1), SHOWN,
          "The same probes for every rope_type (configs in ROPE_CONFIGS of "
          "harness/verbs/precision/rotary.py: linear x8, dynamic x8 over 4096, yarn x16 "
          "over 4096, llama3 x8 over 8192, longrope x32 over 4096), float32 cache, computed with "
          "float32 angles and with reduced float64 angles. Scaling that divides a frequency "
          "makes its angles, and so their rounding, smaller; the largest error comes from the "
          "fastest frequencies, which yarn and llama3 leave alone.", choose_by="config"),
)
