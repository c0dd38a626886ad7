"""Diffusion timestep embeddings: `[len(timesteps), dim]` sinusoids of (fractional) timesteps.

The spec (spec.py), its float64 reference and tolerance (reference.py), and verify's cases,
the named conventions and bench's spec (cases.py) make one kind with one workload,
"timestep". docs/timestep.md says which library uses which convention.
"""

from __future__ import annotations

from harness.core.kinds import Kind, Workload, add
from harness.core.kinds.timestep.cases import CONVENTIONS, bench_spec, timestep_cases
from harness.core.kinds.timestep.reference import angles, exact_tolerance, reference, tolerance
from harness.core.kinds.timestep.spec import TimestepSpec

__all__ = ["TIMESTEP", "TimestepSpec", "CONVENTIONS"]

TIMESTEP = add(Kind(
    name="timestep", spec_type=TimestepSpec, reference=reference, tolerance=tolerance, exact=exact_tolerance,
    cases=timestep_cases,
    workloads=(Workload("timestep", shape=lambda spec, batch, heads: (spec.count, spec.dim),
                        angles=angles, order=5,
                        roof=("the slower of two limits: the fastest bare fill of the same bytes, and "
                              "the same count of float32 sines and cosines through vector math"),
                        usual=(("cpu", ("timestep-torch-diffusers",)), ("cuda", ("timestep-torch-cuda-diffusers",))),
                        doc="embed the spec's timesteps: [len(timesteps), dim]"),),
    conventions=CONVENTIONS, bench_spec=bench_spec,
    reader="harness.identify.readers.timestep", studies=("harness.verbs.precision.timestep",),
    bench_sizes=((256, 8192, 65536), (256, 1024)),    # a batch of timesteps x a UNet's widths
    bench_dtypes=("float32", "bfloat16", "float16"),   # diffusion models run in half precision
    bench_sizes_quick=((256, 4096), (256, 1024)),
    axes=("timesteps", "dim"),
    doc="diffusion timestep embeddings (DDPM, guided-diffusion, diffusers' Timesteps)",
))
