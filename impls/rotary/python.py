"""Pure Python: the rotary formulas as loops, `math.cos`/`math.sin` per element (tiny specs only).

The plainest statement of the contract, a cross-check on the vectorised ones: every cache
column computes its own angle from its own frequency, and every rotated dim reads its partner
by the layout's rule. Results are NumPy arrays (so no bfloat16); big specs are refused.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register
from ._supports import PYTHON


def _frequency(spec: RotarySpec, j: int) -> int:
    return j % spec.n_freq if spec.layout == "half" else j // 2


def _partner(spec: RotarySpec, j: int) -> tuple[int, float]:
    """(the dim x_j is paired with, the sign its sin term carries)."""
    if spec.layout == "half":
        n = spec.n_freq
        return (j + n, -1.0) if j < n else (j - n, 1.0)
    return (j + 1, -1.0) if j % 2 == 0 else (j - 1, 1.0)


def _cache_rows(spec: RotarySpec, positions) -> tuple[list, list]:
    inv_freq = [float(v) for v in spec.inv_freq()]
    scale = spec.attention_scaling
    cos, sin = [], []
    for p in positions:
        angles = [p * inv_freq[_frequency(spec, j)] for j in range(spec.rot)]
        cos.append([scale * math.cos(a) for a in angles])
        sin.append([scale * math.sin(a) for a in angles])
    return cos, sin


@register(name="rotary-python-cache", backend="python", workload="cache", supports=PYTHON)
def build_rotary_python_cache(spec: RotarySpec):
    """Loops over positions and columns: cos/sin((offset + p) * inv_freq[f(j)]) per element."""
    positions = range(spec.offset, spec.offset + spec.length)

    def cache():
        cos, sin = _cache_rows(spec, positions)
        return np.array(cos, dtype=spec.dtype), np.array(sin, dtype=spec.dtype)

    return cache


@register(name="rotary-python-apply", backend="python", workload="apply", supports=PYTHON)
def build_rotary_python_apply(spec: RotarySpec):
    """Loops: each rotated dim x_j cos_j + sign x_partner sin_j at its position; the rest copied."""
    def rotate(x, cos, sin):
        out = [[[list(row) for row in head] for head in batch] for batch in x]
        for batch in out:
            for head in batch:
                for i, row in enumerate(head):
                    source = list(row)
                    for j in range(spec.rot):
                        partner, sign = _partner(spec, j)
                        row[j] = source[j] * cos[i][j] + sign * source[partner] * sin[i][j]
        return np.array(out, dtype=spec.dtype)

    def apply(q, k, positions):
        cos, sin = _cache_rows(spec, [int(p) for p in positions])
        return tuple(rotate(np.asarray(x, np.float64).tolist(), cos, sin) for x in (q, k))

    return apply
