"""The bugs that shipped, caught: each adversary is an honest torch implementation with one
mistake that a real library shipped; verify fails it with a reason that says where, while the
honest version passes every verify case of its kind in every dtype.

Positions in bfloat16 (candle#3520, GPT-NeoX#1003), angles in the output's half dtype
(transformers#29285), a dynamic-NTK cache stale past the trained length, k left unrotated under
GQA (Liger-Kernel#342), a partial-rotary tail overwritten, inputs rotated in place by an
out-of-place kernel, timesteps cast to bfloat16 (999 becomes 1000), a kernel that rotates only
a power-of-two block of a head_dim of 96, cos and sin swapped, one sequence's positions used for
the whole batch, a 1-D table from bfloat16 positions (the seed's `torch.arange(L, dtype=bf16)`),
and an inv_freq held in bfloat16 (InternLM#237, tenstorrent/tt-metal#54516).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from harness import ApplyForms, RotarySpec, Spec, TimestepSpec
from harness.core import checks, kinds
from harness.core.registry import Implementation

torch = pytest.importorskip("torch")

FORMS = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True)
HALF = ("float16", "bfloat16")


def _through(x, dtype: str):
    """x (float32) held in `dtype` for a moment, as the bug does."""
    return x.to(getattr(torch, dtype)).float()


# -- the 1-D table ---------------------------------------------------------------------------------
def table(mistake: str = ""):
    def build(spec: Spec):
        def call():
            pos = torch.arange(spec.offset, spec.offset + spec.length, dtype=torch.float32)
            if mistake == "bf16 positions":
                pos = _through(pos, "bfloat16")
            k = torch.arange(spec.n_freq, dtype=torch.float64)
            inv = (spec.base ** (-k / spec.denominator)).float()
            theta = pos[:, None] * inv
            out = torch.empty(spec.length, spec.d_model)
            out[:, 0::2], out[:, 1::2] = theta.sin(), theta.cos()
            return out.to(getattr(torch, spec.dtype))
        return call
    return Implementation("table-" + (mistake or "honest"), "torch", "cpu", build,
                          lambda s: None if s.layout == "interleaved" and s.freq_shift == 0 and s.scale == 1
                          and s.d_model % 2 == 0 else "paper convention only", workload="table")


# -- the rotary cache ------------------------------------------------------------------------------
def _freqs(spec: RotarySpec, mistake: str):
    inv = torch.from_numpy(spec.inv_freq()).float()
    if mistake == "stale past the trained length":     # dynamic NTK: the base never raised
        inv = torch.from_numpy(spec.replace(rope_type="default", factor=1.0,
                                            max_position_embeddings=None).inv_freq()).float()
    if mistake == "bf16 inv_freq":                      # model.to(torch.bfloat16) casts the buffer
        inv = _through(inv, "bfloat16")
    return inv


def _sincos(spec: RotarySpec, ids, mistake: str):
    """cos and sin `[..., n_freq]` at integer position ids, float32 angles (model code)."""
    pos = ids.float()
    if mistake == "bf16 positions":
        pos = _through(pos, "bfloat16")
    theta = pos[..., None] * _freqs(spec, mistake)
    if mistake == "half angles":                        # autocast: the angle in the output's dtype
        theta = _through(theta, spec.dtype if spec.dtype in HALF else "bfloat16")
    scale = spec.attention_scaling
    cos, sin = theta.cos() * scale, theta.sin() * scale
    return (sin, cos) if mistake == "cos and sin swapped" else (cos, sin)


def _spread(spec: RotarySpec, f):
    return torch.cat([f, f], -1) if spec.layout == "half" else f.repeat_interleave(2, -1)


def cache(mistake: str = ""):
    def build(spec: RotarySpec):
        def call():
            ids = torch.arange(spec.offset, spec.offset + spec.length)
            cos, sin = _sincos(spec, ids, mistake)
            dtype = getattr(torch, spec.dtype)
            return _spread(spec, cos).to(dtype), _spread(spec, sin).to(dtype)
        return call
    return Implementation("cache-" + (mistake or "honest"), "torch", "cpu", build, lambda s: None,
                          workload="cache", kind="rotary")


# -- the rotary apply ------------------------------------------------------------------------------
def _rotate(spec: RotarySpec, x, cos, sin, mistake: str):
    """x heads first `[b, h, s, d]` rotated by cos, sin `[.., s, n_freq]` in float32."""
    rot = spec.rot
    if mistake == "power-of-two block only":            # a kernel's BLOCK = 64 with no remainder loop
        rot = 1 << (spec.rot.bit_length() - 1)
    n = rot // 2
    pairs = (slice(0, n), slice(n, rot)) if spec.layout == "half" else (slice(0, rot, 2), slice(1, rot, 2))
    cos, sin = cos[..., :n], sin[..., :n]
    x1, x2 = x[..., pairs[0]], x[..., pairs[1]]
    out = x.clone()
    out[..., pairs[0]], out[..., pairs[1]] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    if mistake == "tail overwritten" and spec.rot < spec.head_dim:
        out[..., spec.rot:] = 0.0
    return out


def apply(mistake: str = ""):
    def build(spec: RotarySpec, q, k, ids):
        bshd = spec.qk_layout == "bshd"
        dtype = getattr(torch, spec.dtype)
        qx, kx = torch.from_numpy(q), torch.from_numpy(k)     # shares the caller's memory
        pid = torch.from_numpy(ids)

        def call():
            rows = pid[:1].expand_as(pid) if mistake == "one sequence's positions" and pid.ndim == 2 else pid
            cos, sin = _sincos(spec, rows, mistake)
            if cos.ndim == 3:                                  # [b, s, n] -> per sequence
                cos, sin = cos[:, None], sin[:, None]
            heads_first = (lambda x: x.transpose(1, 2)) if bshd else (lambda x: x)
            out = []
            for name, x in (("q", qx), ("k", kx)):
                if name == "k" and mistake == "k unrotated under GQA" and kx.shape != qx.shape:
                    out.append(x.to(dtype))
                    continue
                work = x.double() if spec.dtype == "float64" else x.float()    # model code's work dtype
                rotated = heads_first(_rotate(spec, heads_first(work), cos, sin, mistake))
                if mistake == "inputs rotated in place":
                    x.copy_(rotated)
                out.append(rotated.to(dtype))
            return tuple(out)
        return call
    return Implementation("apply-" + (mistake or "honest"), "torch", "cpu", build, lambda s: None,
                          workload="apply", kind="rotary", forms=FORMS)


# -- the timestep embedding ------------------------------------------------------------------------
def timestep(mistake: str = ""):
    def build(spec: TimestepSpec):
        def call():
            t = torch.tensor(spec.timesteps, dtype=torch.float32)
            if mistake == "bf16 timesteps":
                t = _through(t, "bfloat16")
            k = torch.arange(spec.half, dtype=torch.float32)
            freqs = torch.exp(-np.log(spec.max_period) * k / spec.denominator)
            theta = spec.scale * t[:, None] * freqs
            first, second = (theta.cos(), theta.sin()) if spec.cos_first else (theta.sin(), theta.cos())
            out = torch.zeros(spec.count, spec.dim)
            out[:, :spec.half], out[:, spec.half:2 * spec.half] = first, second
            return out.to(getattr(torch, spec.dtype))
        return call
    return Implementation("timestep-" + (mistake or "honest"), "torch", "cpu", build,
                          lambda s: None if s.max_angle < 1e5 else "float32 angles stop at 1e5 rad here",
                          workload="timestep", kind="timestep")


# -- each honest version passes every case; each mistake fails with its reason -------------------------
HONEST = {"table": table(), "cache": cache(), "apply": apply(), "timestep": timestep()}


@pytest.mark.parametrize("workload", sorted(HONEST))
def test_the_honest_versions_pass_every_case_in_every_dtype(workload):
    impl = HONEST[workload]
    cases = kinds.named(impl.kind).cases(quick=workload != "timestep", n_random=4, seed=0)
    results = [checks.check(impl, spec) for spec in cases]
    ran = [r for r in results if r.status != "skip"]
    assert {r.spec.dtype for r in ran} == {"float16", "bfloat16", "float32", "float64"}
    bad = [(r.spec.short(), r.reason) for r in ran if r.status != "pass"]
    assert not bad, bad


GQA = RotarySpec(300, 64, kv_heads=1, position_ids="batch", qk_layout="bshd")
SHIPPED = [
    # (mistake, implementation, where it fails, a pattern the reason must hold)
    ("bf16 positions", table("bf16 positions"), Spec(4096, 256, dtype="bfloat16"), r"position 2\d\d\b"),
    ("bf16 positions", cache("bf16 positions"), RotarySpec(300, 64), r"position 2\d\d\b"),
    ("bf16 positions", apply("bf16 positions"), GQA, "error"),
    ("half angles", cache("half angles"), RotarySpec(300, 64), "error"),
    ("stale past the trained length", cache("stale past the trained length"),
     RotarySpec(600, 64, rope_type="dynamic", factor=2.0, max_position_embeddings=256), "error"),
    ("bf16 inv_freq", cache("bf16 inv_freq"), RotarySpec(300, 64), "error"),
    ("cos and sin swapped", cache("cos and sin swapped"), RotarySpec(300, 64), "(cos|sin): error"),
    ("cos and sin swapped", apply("cos and sin swapped"), GQA, "(q|k): error"),
    ("k unrotated under GQA", apply("k unrotated under GQA"), GQA, "k: error"),
    ("tail overwritten", apply("tail overwritten"), RotarySpec(100, 80, rotary_dim=32),
     r"0 \(must come back unchanged\) at position \d+, column (3[2-9]|[4-7]\d)"),
    ("inputs rotated in place", apply("inputs rotated in place"), GQA, r"wrote into its input\(s\) q, k"),
    ("power-of-two block only", apply("power-of-two block only"), RotarySpec(100, 96), "column"),
    ("one sequence's positions", apply("one sequence's positions"), GQA, r"position ids \[batch, seq\]"),
    ("bf16 timesteps", timestep("bf16 timesteps"), TimestepSpec((999.0, 500.0, 3.0), 320), "position 0"),
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("mistake, impl, spec, words", SHIPPED, ids=[f"{s[0]}-{s[1].workload}" for s in SHIPPED])
def test_each_shipped_bug_fails_verify_with_a_reason(mistake, impl, spec, words, dtype):
    result = checks.check(impl, spec.replace(dtype=dtype))
    assert result.status == "fail", (mistake, dtype, result.status, result.reason)
    assert re.search(words, result.reason), result.reason
    assert result.grade == "fail"
