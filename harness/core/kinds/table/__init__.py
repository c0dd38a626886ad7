"""The 1-D sinusoidal table `[length, d_model]`: the Spec, its reference, tolerance and cases.

Its pieces sit beside this module (spec, reference, tolerance, cases, conventions,
supports) as every kind's do; this module makes them a kind, with two workloads: the table itself, and `forward`, which
adds it to a batch of activations `x` (`[batch, length, d_model]`) and returns `x + PE`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from harness.core.kinds.table.cases import default_cases
from harness.core.kinds.table.conventions import CONVENTIONS
from harness.core.kinds import ADDS, Kind, Workload, add
from harness.core.kinds.table.reference import reference
from harness.core.kinds.table.spec import Spec
from harness.core.kinds.table.supports import Supports
from harness.core.kinds.table.tolerance import eps, exact_tolerance, tolerance

def forward_input(spec: Spec, batch: Optional[int] = None) -> np.ndarray:
    """Deterministic x of shape [batch, length, d_model] for the forward workload (by default
    verify's batch)."""
    batch = FORWARD.verify_batch if batch is None else batch
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((batch, spec.length, spec.d_model))
    return x.astype(spec.dtype if spec.dtype != "bfloat16" else "float32")


def _forward_expected(spec: Spec, args: tuple, table: np.ndarray,
                      allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x + PE, allowing the table's error plus the rounding of the sum in the output dtype."""
    (x,) = args
    expected = x.astype(np.float64) + table[None]
    return expected, allowed[None] + eps(spec.dtype) * (1.0 + np.abs(expected))


def _bench_spec(length: int, width: int, dtype: str, convention: str) -> Spec:
    return Spec(length, width, dtype=dtype, **CONVENTIONS[convention])


# the 1-D table's roofs keep the short names they had before other kinds (roof_suffix=""):
# committed runs hold them
FORWARD = Workload("forward", shape=lambda spec, batch, heads: (batch, spec.length, spec.d_model),
                   inputs=lambda spec, batch, heads: (forward_input(spec, batch),),
                   expect=_forward_expected, batched=True, input_names=("x",),
                   usual=(("cpu", ("numpy-forward",)),), order=1, traffic=ADDS, roof_suffix="",
                   roof="fastest bare x + y of the same shape (fresh or recycled memory)",
                   verify_batch=2, bench_batch=2,
                   doc="x + PE for x of shape [batch, length, d_model]")

TABLE = add(Kind(
    name="table", spec_type=Spec, reference=reference, tolerance=tolerance, exact=exact_tolerance,
    cases=default_cases,
    workloads=(
        Workload("table", shape=lambda spec, batch, heads: (spec.length, spec.d_model),
                 usual=(("cpu", ("seed-numpy-stack",)),   # the torch seed has no half types
                        ("cuda", ("seed-torch-cuda-stack", "torch-cuda-stack"))),
                 order=0, roof_suffix="", doc="build the [length, d_model] table"),
        FORWARD,
    ),
    conventions=CONVENTIONS, bench_spec=_bench_spec, default_supports=Supports(),
    bench_sizes=((64, 512, 4096, 8192, 65536), (64, 256, 1024, 4096)),
    bench_sizes_quick=((64, 4096), (64, 512)),
    bench_dtypes=("float32", "float64", "bfloat16", "float16"),   # half: where a backend builds them
    doc="the 1-D absolute table of 'Attention is all you need' and its variants",
))
