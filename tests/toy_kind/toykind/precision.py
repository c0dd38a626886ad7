"""The toy kind's precision study (named by its Kind's `studies`): the squares in float32 and
float16 against float64, at n = 2 ** p. Imported by the precision verb only."""

from __future__ import annotations

import numpy as np

from harness.verbs.precision.common import Point
from harness.verbs.precision.study import Study
from harness.verbs.precision.verdicts import Axis

PROBES = (4, 8, 12)


def measure(probes: list) -> list[Point]:
    points = []
    for p in probes:
        n = np.arange(2.0 ** p - 8, 2.0 ** p)
        for dtype in ("float16", "float32"):
            err = np.abs(np.asarray(n, dtype) ** 2 - n ** 2)   # noqa: the dtype's own rounding
            points.append(Point("squares", "squares", f"numpy {dtype}", "numpy", dtype, float(p),
                                float(err.max()), backend="numpy"))
    return points


STUDIES = (Study("squares", "squares", __name__, PROBES, PROBES, "Toy squares", Axis("log2 n"),
                 PROBES, "The largest |error| of n squared in the dtype over 8 values below 2^p."),)
