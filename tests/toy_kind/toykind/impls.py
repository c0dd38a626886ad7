"""The toy kind's implementations: a plugin, which the judge never imports."""

from __future__ import annotations

import numpy as np

from harness import register


@register(name="squares-numpy", backend="numpy", workload="squares")
def build_squares(spec):
    return lambda: np.arange(spec.n, dtype=spec.dtype) ** 2


@register(name="cubes-numpy", backend="numpy", workload="cubes")
def build_cubes(spec):
    return lambda: np.arange(spec.n, dtype=spec.dtype) ** 3
