"""The 2-D/3-D sincos grid kind: ViT/MAE/DiT/DETR/video tables `[extra + prod(grid), d_model]`.

One workload, `grid`, builds the whole table: `extra` zero rows, then the grid's cells
row-major (last axis fastest), each the concatenation of its axes' 1-D sinusoidal embeddings
in `axis_order`. See GridSpec for the fields and docs/grid.md for the conventions.
"""

from __future__ import annotations

from harness.core.kinds import Kind, Workload, add
from harness.core.kinds.grid.cases import grid_cases
from harness.core.kinds.grid.conventions import CONVENTIONS, bench_spec
from harness.core.kinds.grid.reference import exact_tolerance, reference, tolerance
from harness.core.kinds.grid.spec import COORDS, LAYOUTS, GridSpec

GRID = add(Kind(
    name="grid", spec_type=GridSpec, reference=reference, tolerance=tolerance, exact=exact_tolerance,
    cases=grid_cases,
    workloads=(
        Workload("grid", shape=lambda spec, batch, heads: (spec.rows, spec.d_model),
                 usual=(("cpu", ("grid-numpy",)), ("cuda", ("grid-torch-cuda",))), order=4,
                 doc="build the [extra + prod(grid), d_model] table"),
    ),
    conventions=CONVENTIONS, bench_spec=bench_spec,
    reader="harness.identify.readers.grid", studies=("harness.verbs.precision.grid",),
    bench_sizes=((1024, 16384), (256, 768)),          # a ViT-B/16 at 512 px is 1024 cells x 768
    bench_sizes_quick=((256, 4096), (256, 768)),
    bench_dtypes=("float32", "bfloat16", "float16"),   # DiT and video models run in half precision
    axes=("grid cells", "d_model"),
    doc="2-D/3-D sincos grids of ViT/MAE/DiT/DETR and video models",
))

__all__ = ["CONVENTIONS", "COORDS", "GRID", "GridSpec", "LAYOUTS", "bench_spec", "reference", "tolerance"]
