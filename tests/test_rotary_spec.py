"""RotarySpec: validation (each bad value a ValueError naming the field and its range), derived
members, the dict round trip, and the kind's registration."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness.core import kinds
from harness.core.kinds.rotary import CONVENTIONS, ROPE_TYPES, RotarySpec, bench_spec
from harness.core.kinds.rotary.cases import LONG_POSITIONS, rotary_cases
from harness.core.spec import DTYPES

YARN = dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64)
LONGROPE = dict(rope_type="longrope", factor=4.0, original_max_position_embeddings=64,
                short_factor=(1.0, 2.0), long_factor=(3.0, 4.0))

BAD = [
    (dict(head_dim=5), "head_dim must be an even integer >= 2"),
    (dict(head_dim=0), "head_dim must be an even integer >= 2"),
    (dict(length=0), "length must be an integer >= 1"),
    (dict(length=2.0), "length must be an integer >= 1"),
    (dict(rotary_dim=6), r"2 <= rotary_dim <= head_dim=4"),
    (dict(rotary_dim=3), "rotary_dim must be None"),
    (dict(rotary_dim=0), "rotary_dim must be None"),
    (dict(offset=-1), "offset must be an integer >= 0"),
    (dict(offset=2**53), r"offset \+ length must be <= 2\*\*53"),
    (dict(base=1.0), "base must be a finite number > 1"),
    (dict(base=0.5), "base must be a finite number > 1"),
    (dict(base=math.inf), "base must be a finite number > 1"),
    (dict(base="1e4"), "base must be a finite number > 1"),
    (dict(layout="concat"), r"layout must be one of \('half', 'interleaved'\)"),
    (dict(dtype="int8"), "dtype must be one of"),
    (dict(rope_type="ntk"), "rope_type must be one of .*longrope"),
    (dict(rope_type="linear", factor=0.0), "factor must be a finite number > 0"),
    (dict(rope_type="linear", factor=-2.0), "factor must be a finite number > 0"),
    (dict(rope_type="linear", factor=math.nan), "factor must be a finite number > 0"),
    (dict(YARN, beta_fast=1.0), "beta_fast must be > beta_slow=1.0"),
    (dict(YARN, beta_slow=0.0), "beta_slow must be a finite number > 0"),
    (dict(YARN, attention_factor=0.0), "attention_factor must be a finite number > 0"),
    (dict(YARN, truncate=1), "truncate must be True or False"),
    (dict(YARN, original_max_position_embeddings=None), "original_max_position_embeddings is required"),
    (dict(YARN, original_max_position_embeddings=1), "original_max_position_embeddings must be .* >= 2"),
    (dict(rope_type="llama3", factor=8.0), "original_max_position_embeddings is required"),
    (dict(rope_type="llama3", factor=8.0, original_max_position_embeddings=64, low_freq_factor=4.0),
     "high_freq_factor must be > low_freq_factor=4.0"),
    (dict(rope_type="dynamic", factor=2.0), "max_position_embeddings is required"),
    (dict(rope_type="dynamic", factor=2.0, max_position_embeddings=64, head_dim=2),
     "rotary_dim must be >= 4"),
    (dict(LONGROPE, original_max_position_embeddings=None), "original_max_position_embeddings is required"),
    (dict(LONGROPE, short_factor=None), "short_factor is required"),
    (dict(LONGROPE, short_factor=(1.0, 2.0, 3.0)), "short_factor must hold n_freq = rotary_dim // 2 = 2"),
    (dict(LONGROPE, long_factor=(1.0,)), "long_factor must hold n_freq = rotary_dim // 2 = 2"),
    (dict(LONGROPE, long_factor=(1.0, 0.0)), "long_factor must hold .* > 0"),
    (dict(LONGROPE, long_factor="12"), "long_factor must be None or a sequence"),
    (dict(factor=2.0), "factor is not read by rope_type='default'"),
    (dict(rope_type="linear", factor=2.0, beta_fast=8.0), "beta_fast is not read by rope_type='linear'"),
    (dict(YARN, short_factor=(1.0, 1.0)), "short_factor is not read by rope_type='yarn'"),
    (dict(rope_type="linear", factor=1e-12, offset=2**40), "the largest angle"),
]


@pytest.mark.parametrize("fields, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_is_a_value_error_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        RotarySpec(**{"length": 8, "head_dim": 4, **fields})


def test_full_rotary_has_one_spelling():
    assert RotarySpec(8, 64, rotary_dim=64) == RotarySpec(8, 64)
    assert RotarySpec(8, 64, rotary_dim=64).rotary_dim is None


def test_derived_members():
    spec = RotarySpec(100, 64, rotary_dim=16, offset=28, dtype="bfloat16")
    assert (spec.rot, spec.n_freq, spec.max_position, spec.seq_len) == (16, 8, 127, 128)
    assert (spec.itemsize, spec.nbytes, spec.nbytes_reference) == (2, 2 * 100 * 16 * 2, 2 * 100 * 16 * 8)
    assert spec.attention_scaling == 1.0
    freqs = spec.inv_freq()
    assert freqs.dtype == np.float64 and freqs.shape == (8,)
    np.testing.assert_allclose(freqs, 10000.0 ** (-np.arange(0, 16, 2) / 16), rtol=1e-15)
    freqs[:] = 0   # a fresh array each call: the caller may scribble on it
    assert spec.inv_freq()[0] == 1.0


def test_numbers_are_stored_as_floats_and_lists_as_tuples():
    spec = RotarySpec(8, 4, base=500000, **{**LONGROPE, "factor": 4, "short_factor": [1, 2]})
    assert isinstance(spec.base, float) and isinstance(spec.factor, float)
    assert spec.short_factor == (1.0, 2.0) and isinstance(spec.short_factor, tuple)
    hash(spec)


def test_short_names_what_differs_from_the_defaults():
    assert RotarySpec(128, 64).short() == "128x64 float32"
    label = RotarySpec(128, 64, layout="interleaved", offset=3, **dict(LONGROPE, short_factor=None,
                       long_factor=None, rope_type="yarn")).short()
    assert label == ("128x64 float32 layout=interleaved offset=3 rope_type=yarn factor=4.0 "
                     "original_max_position_embeddings=64")
    assert "short_factor=[2 values]" in RotarySpec(8, 4, **LONGROPE).short()


@pytest.mark.parametrize("spec", rotary_cases() + [RotarySpec(8, 4, **LONGROPE)], ids=lambda s: s.short())
def test_every_case_survives_a_json_round_trip(spec):
    text = json.dumps(kinds.spec_dict(spec))
    back = kinds.spec_from_dict(json.loads(text))
    assert back == spec and isinstance(back, RotarySpec)
    assert RotarySpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec


def test_from_dict_names_unknown_fields():
    with pytest.raises(ValueError, match="no field"):
        RotarySpec.from_dict({"length": 8, "head_dim": 4, "d_model": 4})


def test_replace_validates():
    spec = RotarySpec(8, 4)
    assert spec.replace(offset=5).offset == 5
    with pytest.raises(ValueError, match="head_dim"):
        spec.replace(head_dim=3)


def test_the_kind_is_registered_with_its_workloads():
    kind = kinds.named("rotary")
    assert kind.spec_type is RotarySpec and kinds.of(RotarySpec(4, 4)) is kind
    assert kind.workload_names == ("cache", "apply")
    assert kinds.of_workload("apply") is kind
    cache, apply = kind.workload("cache"), kind.workload("apply")
    spec = RotarySpec(10, 8, rotary_dim=4)
    assert cache.parts == ("cos", "sin") and cache.shape(spec, 1, 1) == (2, 10, 4)
    assert apply.parts == ("q", "k") and apply.batched and apply.shape(spec, 3, 5) == (2, 3, 5, 10, 8)
    q, k, positions = apply.arguments(spec, 3, 5)
    assert q.shape == k.shape == (3, 5, 10, 8) and positions.dtype == np.int64


def test_bench_spec_maps_the_axes():
    kind = kinds.named("rotary")
    assert list(CONVENTIONS)[:2] == ["neox", "gptj"]
    assert bench_spec(512, 128, "bfloat16", "gptj") == RotarySpec(512, 128, layout="interleaved",
                                                                  dtype="bfloat16")
    for convention in CONVENTIONS:
        for length in kind.bench_sizes[0]:
            for width in kind.bench_sizes[1]:
                assert kind.bench_spec(length, width, "float32", convention).head_dim == width


def test_cases_cover_every_rope_type_layout_dtype_and_a_long_context():
    specs = rotary_cases()
    assert {s.rope_type for s in specs} == set(ROPE_TYPES)
    assert {s.layout for s in specs} == {"half", "interleaved"}
    assert {s.dtype for s in specs} == set(DTYPES)
    assert any(s.rotary_dim is not None for s in specs)
    assert any(s.max_position >= LONG_POSITIONS for s in specs)
    assert any(s.offset > 0 for s in specs)
    longrope = [s for s in specs if s.rope_type == "longrope"]
    assert {s.seq_len > s.original_max_position_embeddings for s in longrope} == {True, False}
    assert 20 <= len(specs) <= 60
    assert max(s.length * s.head_dim for s in specs) <= 1 << 20
    assert rotary_cases() == specs and len(rotary_cases(quick=True)) < len(specs)
