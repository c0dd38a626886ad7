"""Pure Python timestep embedding: `math.sin`/`math.cos` per element, for tiny specs only."""

from __future__ import annotations

import math

import numpy as np

from harness import TimestepSupports, register
from harness.core.kinds.timestep import TimestepSpec

#: One Python call per element: past this it costs seconds and says nothing new.
MAX_ELEMENTS = 20_000


@register(name="timestep-python", backend="python", workload="timestep",
          supports=TimestepSupports(dtypes=("float16", "float32", "float64"), max_elements=MAX_ELEMENTS))
def build_python(spec: TimestepSpec):
    """Nested loops over timesteps and frequencies, in float64, rounded once on store."""
    timesteps, dim, half = spec.timesteps, spec.dim, spec.half
    log_period, divisor, scale = math.log(spec.max_period), spec.half - spec.freq_shift, spec.scale
    first, second = (math.cos, math.sin) if spec.cos_first else (math.sin, math.cos)
    dtype = np.dtype(spec.dtype)

    def embed():
        rows = []
        for t in timesteps:
            row = [0.0] * dim
            for k in range(half):
                angle = scale * t * math.exp(-log_period * k / divisor)
                row[k] = first(angle)
                row[half + k] = second(angle)
            rows.append(row)
        return np.array(rows, dtype=dtype)

    return embed
