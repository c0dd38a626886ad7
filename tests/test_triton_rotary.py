"""The Triton rotary kernels (impls/rotary/triton.py) against the kind's float64 references.

Where they run: on the CPU under Triton's interpreter when TRITON_INTERPRET=1 (how a machine
without a GPU checks the kernels' logic: `nox -s triton` installs triton beside the stack and
runs this file so), else on a CUDA device; skipped without triton (the stack does not install
it) or without either.
The interpreter is slow and not the compiler: a GPU run must still verify the registered
implementations (its float scalars, libm and FMA contraction are the compiler's).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from harness import implementations
from harness.core.kinds.rotary import (RotarySpec, apply_reference, apply_tolerance, cache_reference,
                                       cache_tolerance)
from harness.core.kinds.rotary.apply import apply_inputs, representable

NAMES = ("triton-rotary-cache", "triton-rotary-apply-fused")
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def _device() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return None
    if INTERPRET:
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else None


DEVICE = _device()
needs_triton = pytest.mark.skipif(
    DEVICE is None, reason="needs triton (`nox -s triton` installs it beside the stack) and either TRITON_INTERPRET=1 "
    "(its CPU interpreter) or a CUDA device")

#: Small specs over the edges: both layouts, partial rotary (a tail), offsets, scaled rope_types
#: (yarn's attention scaling != 1), several frequency blocks in the cache (n_freq 256 > 128).
SPECS = {
    "half-f32": RotarySpec(37, 16),
    "interleaved-bf16": RotarySpec(37, 16, layout="interleaved", dtype="bfloat16"),
    "half-partial-f16": RotarySpec(21, 24, rotary_dim=12, offset=5, dtype="float16"),
    "interleaved-partial": RotarySpec(20, 24, rotary_dim=12, layout="interleaved", offset=3),
    "llama3-bf16": RotarySpec(19, 32, base=500000.0, rope_type="llama3", factor=8.0,
                              original_max_position_embeddings=8, dtype="bfloat16"),
    "yarn-interleaved": RotarySpec(19, 16, layout="interleaved", rope_type="yarn", factor=8.0,
                                   original_max_position_embeddings=8),
    "half-f64": RotarySpec(17, 8, dtype="float64"),
    "wide-half": RotarySpec(5, 512, rotary_dim=512),
    "far-f32": RotarySpec(16, 16, offset=1_000_000),
    "past-int32-interleaved": RotarySpec(8, 16, layout="interleaved", offset=2**31 - 3),
}


#: Largest |error| of a float32 cache at any position: the angle reduced mod 2 pi in float64
#: leaves only the float32 cos/sin and the rounding (the tolerance allows |theta| x eps more).
FLOAT32_ABS = 4 * 2.0 ** -23


def _float64(t) -> np.ndarray:
    import torch

    return t.detach().to("cpu", torch.float64).numpy()


def _worst(got: np.ndarray, expected: np.ndarray, allowed: np.ndarray) -> float:
    assert got.shape == expected.shape and np.isfinite(got).all()
    return float((np.abs(got - expected) / allowed).max())


def _constants(spec: RotarySpec):
    from harness.impls.rotary import triton as triton_rotary

    return triton_rotary.constants(spec, DEVICE)


@needs_triton
@pytest.mark.parametrize("name", sorted(SPECS))
def test_cache_within_tolerance(name):
    import torch

    from harness.impls.rotary import triton as triton_rotary

    spec = SPECS[name]
    dtype = getattr(torch, spec.dtype)
    cos = torch.full((spec.length, spec.rot), float("nan"), dtype=dtype, device=DEVICE)
    sin = torch.full_like(cos, float("nan"))   # a column left unwritten stays NaN
    triton_rotary.cache_launcher(spec, *_constants(spec))(cos, sin)
    got = np.stack([_float64(cos), _float64(sin)])
    expected = cache_reference(spec)
    assert _worst(got, expected, cache_tolerance(spec)) <= 1.0
    if spec.dtype == "float32":   # the float64 reduction's promise, tighter than the tolerance
        assert np.abs(got - expected).max() <= FLOAT32_ABS * spec.attention_scaling


#: (spec, batch, heads, min_programs): min_programs 1 puts several slices in one program, and
#: 7 heads in groups of 3 or 4 leave the last group part-empty.
APPLY_CASES = [(name, 2, 3, None) for name in sorted(SPECS) if name != "wide-half"] + [
    ("half-partial-f16", 1, 7, 2), ("interleaved-bf16", 1, 7, 2), ("wide-half", 1, 7, 5),
    ("yarn-interleaved", 2, 2, 1)]


@needs_triton
@pytest.mark.parametrize("name, batch, heads, min_programs", APPLY_CASES)
def test_apply_within_tolerance(name, batch, heads, min_programs):
    import torch

    from harness.impls.rotary import triton as triton_rotary

    spec = SPECS[name]
    dtype = getattr(torch, spec.dtype)
    q, k, positions = apply_inputs(spec, batch, heads)   # positions shuffled
    qx, kx = (torch.from_numpy(x).to(DEVICE, dtype) for x in (q, k))
    oq, ok = torch.full_like(qx, float("nan")), torch.full_like(kx, float("nan"))
    tiles = triton_rotary.ApplyTiles(min_programs=min_programs or triton_rotary.MIN_PROGRAMS)
    launch = triton_rotary.apply_launcher(spec, qx, kx, torch.from_numpy(positions).to(DEVICE),
                                          *_constants(spec), tiles=tiles)
    launch(qx, kx, oq, ok)
    got = np.stack([_float64(oq), _float64(ok)])
    cache, cache_tol = cache_reference(spec), cache_tolerance(spec)
    allowed = apply_tolerance(spec, q, k, positions, cache, cache_tol)
    assert _worst(got, apply_reference(spec, q, k, positions, cache), allowed) <= 1.0
    tail = got[..., spec.rot:]   # dims past rot pass through unchanged
    np.testing.assert_array_equal(tail, np.stack([_float64(qx), _float64(kx)])[..., spec.rot:])


#: The forms kernels take: (spec, sequence first, q heads, k heads, ids per sequence, in place,
#: min_programs); k with one head and with fewer heads than a group, groups mixing q and k heads.
FORM_CASES = [("half-f32", True, 4, 1, False, False, None),
              ("half-partial-f16", True, 6, 2, True, False, 1),
              ("interleaved-partial", False, 3, 1, True, True, 1),
              ("interleaved-partial", True, 3, 1, False, True, 1),
              ("half-partial-f16", True, 4, 2, False, True, 2),
              ("llama3-bf16", True, 8, 2, True, True, None),
              ("far-f32", False, 2, 2, True, False, 1)]


def _ids(spec: RotarySpec, batch: int, per_sequence: bool) -> np.ndarray:
    """Shuffled position ids `[seq]`, or `[batch, seq]` with a different shuffle per sequence."""
    rng = np.random.default_rng(7)
    rows = [rng.permutation(spec.length) + spec.offset for _ in range(batch if per_sequence else 1)]
    return np.stack(rows) if per_sequence else rows[0]


@needs_triton
@pytest.mark.parametrize("name, seq_first, q_heads, k_heads, per_sequence, in_place, min_programs",
                         FORM_CASES)
def test_apply_forms(name, seq_first, q_heads, k_heads, per_sequence, in_place, min_programs):
    """Sequence-first memory, k with fewer heads, ids per sequence, in place: one kernel, the
    same tolerance, sequence by sequence against the reference."""
    import torch

    from harness.impls.rotary import triton as triton_rotary

    spec, batch = SPECS[name], 3
    rng = np.random.default_rng(11)
    q, k = (representable(rng.standard_normal((batch, h, spec.length, spec.head_dim)), spec.dtype)
            for h in (q_heads, k_heads))
    ids = _ids(spec, batch, per_sequence)
    dtype = getattr(torch, spec.dtype)
    handed = [np.swapaxes(x, 1, 2) if seq_first else x for x in (q, k)]
    qx, kx = (torch.from_numpy(x.copy()).to(DEVICE, dtype) for x in handed)   # in place: a copy
    oq, ok = (qx, kx) if in_place else (torch.full_like(qx, float("nan")),
                                        torch.full_like(kx, float("nan")))
    tiles = triton_rotary.ApplyTiles(min_programs=min_programs or triton_rotary.MIN_PROGRAMS)
    triton_rotary.apply_launcher(spec, qx, kx, torch.from_numpy(ids).to(DEVICE), *_constants(spec),
                                 seq_first=seq_first, in_place=in_place, tiles=tiles)(qx, kx, oq, ok)
    cache, cache_tol = cache_reference(spec), cache_tolerance(spec)
    for x, out in ((q, oq), (k, ok)):
        got = _float64(out)
        got = np.swapaxes(got, 1, 2) if seq_first else got
        for b in range(batch):
            row = ids[b] if per_sequence else ids
            one = x[b:b + 1]
            expected = apply_reference(spec, one, one, row, cache)[0]
            allowed = apply_tolerance(spec, one, one, row, cache, cache_tol)[0]
            assert _worst(got[b:b + 1], expected, allowed) <= 1.0
        np.testing.assert_array_equal(got[..., spec.rot:], x[..., spec.rot:])


def test_registered_for_cuda_or_the_interpreter_and_unavailable_with_a_reason_elsewhere():
    """Importing impls never needs triton; they register for the CPU under the interpreter, else
    for CUDA, and without triton or a GPU each says why it cannot run."""
    impls = {i.name: i for i in implementations()}
    for name in NAMES:
        impl = impls[name]
        assert (impl.backend, impl.device) == ("triton", "cpu" if INTERPRET else "cuda")
        assert impl.supports(RotarySpec(8, 16, dtype="bfloat16", layout="interleaved")) is None
        if DEVICE is None:
            assert impl.unavailable_reason()
