"""The lib-* conventions: each library's published formula, re-derived here with plain loops from
docs/conventions.md, is the Spec it maps to, and its registered implementation reproduces it.

The loops are deliberately naive (one `math.sin` per element), independent of impls/ and of
harness.core.reference, so a wrong mapping in either shows up here.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pytest

import harness.impls.library_conventions as lib
from harness.core.checks import check
from harness.core.reference import reference
from harness.core.registry import REGISTRY
from harness.core.spec import Spec
from harness.core.tolerance import tolerance


def _rows(positions: Iterable[int], width: int, cell) -> np.ndarray:
    return np.array([[cell(p, j) for j in range(width)] for p in positions], dtype=np.float64)


def t2t_loops(positions, d, min_timescale=1.0, max_timescale=1.0e4):
    h = d // 2
    inc = math.log(max_timescale / min_timescale) / max(h - 1, 1)

    def cell(p, j):
        if j >= 2 * h:
            return 0.0
        inv = min_timescale * math.exp(-(j % h) * inc)
        return math.sin(p * inv) if j < h else math.cos(p * inv)
    return _rows(positions, d, cell)


def fairseq_loops(positions, d, padding_idx):
    h = d // 2
    e = math.log(10000) / (h - 1)

    def cell(p, j):
        if p == padding_idx or j >= 2 * h:
            return 0.0
        inv = math.exp(-(j % h) * e)
        return math.sin(p * inv) if j < h else math.cos(p * inv)
    return _rows(positions, d, cell)


def diffusers_loops(timesteps, d, flip=False, shift=1.0, scale=1.0, max_period=10000.0):
    h = d // 2

    def cell(t, j):
        if j >= 2 * h:
            return 0.0
        angle = scale * t * math.exp(-math.log(max_period) * (j % h) / (h - shift))
        first_sin = (j < h) != flip
        return math.sin(angle) if first_sin else math.cos(angle)
    return _rows(timesteps, d, cell)


def guided_diffusion_loops(timesteps, d, max_period=10000.0):
    h = d // 2

    def cell(t, j):
        if j >= 2 * h:
            return 0.0
        angle = t * math.exp(-math.log(max_period) * (j % h) / h)
        return math.cos(angle) if j < h else math.sin(angle)
    return _rows(timesteps, d, cell)


def xlm_loops(positions, d):
    return _rows(positions, d, lambda p, j: (math.sin if j % 2 == 0 else math.cos)(
        p / 10000 ** (2 * (j // 2) / d)))


def keras_hub_loops(positions, d, max_wavelength=10000.0):
    def cell(p, j):
        angle = p * (1 / max_wavelength) ** (2 * (j // 2) / d)
        return math.sin(angle) * (1 - j % 2) + math.cos(angle) * (j % 2)
    return _rows(positions, d, cell)


def marian_loops(positions, d):
    sentinel = (d + 1) // 2

    def cell(p, j):
        if j < sentinel:
            return math.sin(p / 10000 ** (2 * j / d))          # sin of even column 2j
        return math.cos(p / 10000 ** (2 * (j - sentinel) / d))  # cos of odd column 2i+1
    return _rows(positions, d, cell)


def whisper_loops(positions, d, max_timescale=10000.0):
    h = d // 2
    inc = math.log(max_timescale) / (h - 1)
    return _rows(positions, d, lambda p, j: (math.sin if j < h else math.cos)(
        p * math.exp(-inc * (j % h))))


def tutorial_loops(positions, d):
    return _rows(positions, d, lambda p, j: (math.sin if j % 2 == 0 else math.cos)(
        p * math.exp((j - j % 2) * (-math.log(10000.0) / d))))


# (registered name, library parameters as a table built by the loops, the Spec it maps to)
LIBRARY_CASES = [
    ("lib-tensor2tensor", lambda: t2t_loops(range(5, 45), 33, 2.0, 2000.0),
     Spec(40, 33, base=1000.0, layout="concat", freq_shift=1, offset=5, odd="pad", scale=2.0)),
    ("lib-tensor2tensor", lambda: t2t_loops(range(0, 300), 64),
     Spec(300, 64, layout="concat", freq_shift=1)),
    ("lib-fairseq", lambda: fairseq_loops(range(2, 202), 32, padding_idx=1),
     Spec(200, 32, layout="concat", freq_shift=1, offset=2)),
    ("lib-fairseq", lambda: fairseq_loops(range(4, 84), 17, padding_idx=3),
     Spec(80, 17, layout="concat", freq_shift=1, offset=4, odd="pad")),
    ("lib-diffusers", lambda: diffusers_loops(range(0, 1000, 1), 32),
     Spec(1000, 32, layout="concat", freq_shift=1)),
    ("lib-diffusers", lambda: diffusers_loops(range(0, 500), 64, flip=True, shift=0.0),
     Spec(500, 64, layout="concat", freq_shift=0, cos_first=True)),
    ("lib-diffusers", lambda: diffusers_loops(range(0, 400), 48, shift=0.5),
     Spec(400, 48, layout="concat", freq_shift=0.5)),
    ("lib-diffusers", lambda: diffusers_loops(range(0, 100), 33, flip=True, scale=10.0,
                                              max_period=500.0),
     Spec(100, 33, base=500.0, layout="concat", freq_shift=1, cos_first=True, odd="pad",
          scale=10.0)),
    ("lib-diffusers", lambda: diffusers_loops(range(0, 200), 64, scale=1000.0),
     Spec(200, 64, layout="concat", freq_shift=1, scale=1000.0)),
    ("lib-guided-diffusion", lambda: guided_diffusion_loops(range(0, 300), 31),
     Spec(300, 31, layout="concat", cos_first=True, odd="pad")),
    ("lib-xlm", lambda: xlm_loops(range(0, 512), 64), Spec(512, 64)),
    ("lib-xlm", lambda: xlm_loops(range(0, 100), 31), Spec(100, 31, odd="extend")),
    ("lib-keras-hub", lambda: keras_hub_loops(range(7, 107), 16, max_wavelength=500.0),
     Spec(100, 16, base=500.0, offset=7)),
    ("lib-keras-hub", lambda: keras_hub_loops(range(0, 64), 33), Spec(64, 33, odd="extend")),
    ("lib-marian", lambda: marian_loops(range(0, 200), 64), Spec(200, 64, layout="concat")),
    ("lib-marian", lambda: marian_loops(range(3, 103), 31),
     Spec(100, 31, layout="concat", offset=3, odd="extend")),
    ("lib-whisper", lambda: whisper_loops(range(0, 1500), 64), Spec(1500, 64, layout="concat",
                                                                    freq_shift=1)),
    ("lib-pytorch-tutorial", lambda: tutorial_loops(range(0, 256), 32), Spec(256, 32)),
]
CASE_IDS = [f"{name}-{spec.short()}" for name, _, spec in LIBRARY_CASES]


@pytest.mark.parametrize("name, loops, spec", LIBRARY_CASES, ids=CASE_IDS)
def test_published_formula_is_the_spec(name, loops, spec):
    assert np.abs(loops() - reference(spec)).max() < 1e-9


@pytest.mark.parametrize("name, loops, spec", LIBRARY_CASES, ids=CASE_IDS)
def test_registered_convention_reproduces_the_formula(name, loops, spec):
    impl = REGISTRY.get(name)
    verdict = check(impl, spec)
    assert verdict.status == "pass", verdict.reason
    out = np.asarray(impl.build(spec)(), dtype=np.float64)
    assert np.all(np.abs(out - loops()) <= tolerance(spec))


def test_every_library_is_registered_and_documented():
    names = {i.name for i in REGISTRY.all() if i.name.startswith("lib-")}
    assert {name for name, _, _ in LIBRARY_CASES} == names
    docs = (__import__("pathlib").Path(__file__).parents[1] / "docs" / "conventions.md").read_text()
    assert all(f"`{name}`" in docs for name in names)
    assert all(REGISTRY.get(n).doc for n in names)


def test_fairseq_padding_row_is_zero_and_before_the_tokens():
    weights = lib.fairseq_embedding(np.arange(0, 10), 16, padding_idx=1)
    assert not weights[1].any() and weights[0].any()
    tokens = lib.fairseq_embedding(np.arange(2, 10), 16, padding_idx=1)
    np.testing.assert_array_equal(tokens, weights[2:])


# -- bad input -------------------------------------------------------------------------

def test_d_model_2_with_shift_1_is_refused_by_the_spec():
    with pytest.raises(ValueError, match="freq_shift must be < 1"):
        Spec(8, 2, layout="concat", freq_shift=1)


@pytest.mark.parametrize("name", ["lib-fairseq", "lib-whisper"])
def test_half_minus_one_libraries_refuse_one_pair_with_a_reason(name):
    reason = REGISTRY.get(name).supports(Spec(8, 2, layout="concat", freq_shift=0))
    assert "d_model must be >= 4" in reason and "divides by zero" in reason


def test_tensor2tensor_clamps_one_pair_to_shift_0():
    impl = REGISTRY.get("lib-tensor2tensor")
    spec = Spec(8, 3, layout="concat", freq_shift=0, odd="pad")
    assert impl.supports(spec) is None
    assert check(impl, spec).status == "pass"
    assert "freq_shift=1" in impl.supports(spec.replace(d_model=4, odd="error"))


@pytest.mark.parametrize("call, message", [
    (lambda: lib.fairseq_embedding(np.arange(3), 2, None), "embedding_dim must be >= 4"),
    (lambda: lib.whisper_sinusoids(np.arange(3), 5), "channels must be even"),
    (lambda: lib.whisper_sinusoids(np.arange(3), 2), "channels must be >= 4"),
    (lambda: lib.diffusers_timestep_embedding(np.arange(3), 2),
     "downscale_freq_shift must be < embedding_dim"),
    (lambda: lib.t2t_timing_signal(np.arange(3), 8, 5.0, 5.0), "min_timescale and max_timescale"),
    (lambda: lib.pytorch_tutorial_encoding(np.arange(3), 7), "d_model must be even"),
])
def test_library_functions_reject_bad_parameters(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name, odd, supported", [
    ("lib-tensor2tensor", "pad", True), ("lib-tensor2tensor", "extend", False),
    ("lib-xlm", "extend", True), ("lib-xlm", "pad", False),
    ("lib-marian", "extend", True), ("lib-whisper", "pad", False), ("lib-whisper", "extend", False),
    ("lib-pytorch-tutorial", "extend", False), ("lib-diffusers", "pad", True),
])
def test_odd_width_policies(name, odd, supported):
    impl = REGISTRY.get(name)
    layout = "interleaved" if name in ("lib-xlm", "lib-pytorch-tutorial") else "concat"
    shift = 1 if name in ("lib-tensor2tensor", "lib-whisper", "lib-diffusers") else 0
    spec = Spec(40, 21, layout=layout, freq_shift=shift, odd=odd)
    assert (impl.supports(spec) is None) == supported
    if supported:
        assert check(impl, spec).status == "pass"


def test_fairseq_needs_an_offset_and_handles_a_huge_one():
    impl = REGISTRY.get("lib-fairseq")
    assert "must be >= 1" in impl.supports(Spec(8, 16, layout="concat", freq_shift=1))
    verdict = check(impl, Spec(64, 32, layout="concat", freq_shift=1, offset=10**6))
    assert verdict.status == "pass", verdict.reason


def test_keras_hub_float16_fails_the_angle_contract_and_refuses_positions_that_overflow():
    """keras-hub forms its angles in the layer's compute dtype: in float16 that is another angle
    (docs/libraries.md), not a rounding; its float32 table is right."""
    from harness.core.checks import compare
    from harness.core.kinds.table.reference import reference
    from harness.core.kinds.table.tolerance import tolerance

    impl = REGISTRY.get("lib-keras-hub")
    half = Spec(64, 16, offset=1000, dtype="float16")
    assert "forms its positions and angles in float16" in impl.supports(half)
    found = compare(impl.build(half)(), reference(half), tolerance(half), "float16")
    assert found.reason and found.max_abs_err > 0.1, found          # the finding, measured
    assert check(impl, half.replace(dtype="float32")).status == "pass"
    assert "overflows" in impl.supports(Spec(64, 16, offset=70_000, dtype="float16"))
