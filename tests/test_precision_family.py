"""`precision` for rotary, timestep and grid: the known failure modes show up where they should, the
verdicts follow their stated rule, and the verb writes the family's rows, sections and plots."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest

from harness.core import kinds
from harness.core.tolerance import eps
from harness.verbs import precision
from harness.verbs import precision as precision_family
from harness.verbs.precision import grid, rotary, rotary_apply, timestep, verdicts

pytest.importorskip("torch")


def cache_error(method: str, dtype: str, start: int, rope_type: str = "default") -> float:
    chosen = {(name, d): m for name, m, d in rotary.CACHE_METHODS}[(method, dtype)]
    return rotary._error(rotary.probe(start, rope_type), chosen, dtype)


def test_bf16_positions_are_exact_to_256_and_wrong_past_it():
    below, past = 256 - rotary.WINDOW, 256           # windows 248..255 and 256..263
    assert cache_error("bf16-positions", "float32", below) == cache_error("f32-angles", "float32", below)
    assert cache_error("bf16-positions", "float32", past) > 0.1
    assert cache_error("fp16-positions", "float32", 2048 - rotary.WINDOW) < 1e-4
    assert cache_error("fp16-positions", "float32", 2048) > 0.1


def test_float32_angles_error_grows_with_position_and_reduced_float64_does_not():
    f32 = [cache_error("f32-angles", "float32", 2**e) for e in (10, 15, 20)]
    f64 = cache_error("f64-reduced", "float32", 2**20)
    assert f32[0] < f32[1] < f32[2]
    assert f32[2] > 1e4 * f64                     # orders of magnitude apart at 2**20
    assert f64 <= verdicts.GOOD_ULPS * eps("float32")


def test_half_storage_costs_rounding_only_but_half_angles_are_catastrophic():
    for dtype in ("float16", "bfloat16"):
        assert cache_error("f64-reduced", dtype, 2**20) <= eps(dtype)
        assert cache_error("half-angles", dtype, 2**12) > 0.5


def test_bf16_inv_freq_error_grows_linearly_with_position():
    small, larger = cache_error("bf16-inv-freq", "float32", 8), cache_error("bf16-inv-freq", "float32", 64)
    assert 4 < larger / small < 16                 # positions ~8x larger, frequencies' error the same


def test_scaling_that_divides_frequencies_shrinks_float32_angle_error():
    default = cache_error("f32-angles", "float32", 2**20)
    linear = rotary._error(rotary.probe(2**20, "linear"), rotary.f32_angles, "float32")
    assert linear < default / 4                    # factor 8: every angle 8x smaller


def test_every_rope_type_is_measured_against_its_own_reference():
    for rope_type in rotary.ROPE_CONFIGS:
        spec = rotary.probe(2**20, rope_type)
        bound = 4 * eps("float32") * spec.attention_scaling
        assert rotary._error(spec, rotary.f64_reduced, "float32") < bound


def test_a_float32_cache_rotates_bf16_q_k_more_accurately_than_a_bf16_cache():
    points = {p.source: p.max_abs_err for p in rotary_apply.measure([2**20])}
    assert points["f32 cache, f64-reduced"] < points["bf16 cache, f64-reduced"]
    assert points["bf16 cache, f32-angles"] > points["bf16 cache, f64-reduced"]


def test_fp16_timestep_embedding_near_1000_is_far_off_and_diffusers_float32_is_not():
    spec = timestep.probe(999, "float16")
    truth = kinds.reference(spec)
    assert np.abs(timestep.embedding(spec, "float16", "float16") - truth).max() > 1e-2
    assert np.abs(timestep.embedding(spec, "float32", "float32") - truth).max() <= eps("float16")


def test_half_grid_is_off_at_256_per_side_and_float32_stored_in_half_is_not():
    spec = grid.probe(256, "float16")
    truth = kinds.reference(spec)
    assert np.abs(grid.table(spec, "float16") - truth).max() > 1e-2
    assert np.abs(grid.table(spec, "float32") - truth).max() <= eps("float16")


def _rows(errors, dtype="float32"):
    return pd.DataFrame({"source": "m " + dtype, "method": "m", "dtype": dtype,
                         "position": [0, 10, 100][:len(errors)], "max_abs_err": errors})


def test_verdicts_follow_the_stated_rule():
    axis = verdicts.Axis("position", 7)
    good = verdicts.GOOD_ULPS * eps("float32")
    use = verdicts.verdict(_rows([good / 2, good / 2, good]), axis)
    assert use.word == "use" and "out to position 107" in use.line
    beyond = 2 * float(verdicts.bound("float32", np.array([107.0]), "float32")[0])  # past float32's
    avoid = verdicts.verdict(_rows([good / 2, 2 * good, beyond]), axis)
    assert avoid.word == "wrong" and "from position 100" in avoid.line and "to position 7" in avoid.line
    assert verdicts.verdict(_rows([good / 2, 2 * good, 3 * good]), axis).word == "limited"
    bf16 = verdicts.verdict(_rows([good, 0.02, 0.5], dtype="bfloat16"), axis)      # bf16 positions
    assert bf16.word == "wrong" and "from position 100" in bf16.line
    assert verdicts.verdict(_rows([np.inf, np.nan, good]), axis).word == "wrong"


def test_choices_name_the_best_good_method_per_dtype():
    found = [verdicts.verdict(_rows([e, e]).assign(source=s), verdicts.Axis("p"))
             for s, e in (("a float32", 1e-7), ("b float32", 2e-7), ("c float32", 1.0))]
    assert verdicts.choices(found) == ["float32: `a`"]


def test_a_child_process_measures_what_this_process_measures():
    here, _ = precision_family.measure(["timestep"], quick=True, in_process=True)
    there, failures = precision_family.measure(["timestep"], quick=True)
    assert not failures and there == here


def test_verb_writes_the_family_rows_sections_and_plots(tmp_path):
    args = argparse.Namespace(only=[], quick=True, out=str(tmp_path), timeout_s=30.0,
                              kind="rotary", in_process=True)
    assert precision.main(args, []) == 0
    df = pd.read_csv(tmp_path / "precision.csv")
    assert set(df.kind) == {"rotary"} and set(df.study) == {"cache", "rope_type", "apply"}
    assert set(df.method) >= {"bf16-positions", "bf16-inv-freq", "half-angles", "f64-reduced"}
    text = (tmp_path / "precision.md").read_text()
    assert text.startswith("# Precision") and "## Rotary apply in bfloat16" in text
    assert "**avoid** `bf16-positions` (float32) from position 256" in text
    assert (tmp_path / "plots" / "precision-rotary.png").stat().st_size > 10_000
    assert not (tmp_path / "plots" / "precision.png").exists()
