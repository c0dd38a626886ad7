"""The toy kind: squares of the positions 0 .. n-1, and their cubes (a second workload)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core import kinds
from harness.core.kinds.fields import DTYPE, check_fields, integer
from harness.core.record import SpecRecord


@dataclass(frozen=True)
class Squares(SpecRecord):
    n: int
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check_fields(self, {"n": integer(1), "dtype": DTYPE})

    @property
    def elements(self) -> int:
        return self.n

    def short(self) -> str:
        return f"squares {self.n} {self.dtype}"


def reference(spec: Squares) -> np.ndarray:
    return np.arange(spec.n, dtype=np.float64) ** 2


def tolerance(spec: Squares) -> np.ndarray:
    return reference(spec) * 1e-6 + 1e-6


def cubes(spec: Squares, args: tuple, ref: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cubes workload: the squares times the positions."""
    return ref * np.arange(spec.n), tol * np.arange(spec.n) + 1e-6


SQUARES = kinds.add(kinds.Kind(
    name="squares", spec_type=Squares, reference=reference, tolerance=tolerance,
    cases=lambda quick=False, n_random=0, seed=0: [Squares(3), Squares(10)],
    workloads=(kinds.Workload("squares", shape=lambda s, b, h: (s.n,), usual=(("cpu", ("squares-numpy",)),)),
               kinds.Workload("cubes", shape=lambda s, b, h: (s.n,), expect=cubes)),
    conventions={"plain": {}}, bench_spec=lambda length, width, dtype, convention: Squares(length, dtype),
    bench_sizes=((8, 64), (1,)), bench_sizes_quick=((8,), (1,)), bench_dtypes=("float64",),
    bench_dtypes_quick=("float64",), studies=("toykind.precision",)))
