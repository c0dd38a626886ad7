"""Truth from the libraries: diffusers' and transformers' own timestep embeddings equal the
reference of the equivalent TimestepSpec, within the kind's float32 tolerance."""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

import numpy as np
import pytest

from harness.core.kinds.timestep import TimestepSpec
from harness.core.kinds.timestep.reference import reference, tolerance

torch = pytest.importorskip("torch")
TIMESTEPS = (0.0, 1.0, 17.25, 499.5, 999.0)


def _module(name: str):
    """Import a model module, or skip saying why (a torchvision built for another torch makes
    transformers' imports raise RuntimeError, not ImportError)."""
    pytest.importorskip(name.split(".")[0])
    try:
        return importlib.import_module(name)
    except Exception as exc:
        pytest.skip(f"{name} does not import here: {type(exc).__name__}: {exc}")
def _agree(got, spec: TimestepSpec) -> float:
    """The worst error as a fraction of the tolerance, after checking shape and dtype."""
    arr = got.detach().cpu().double().numpy()
    assert arr.shape == (spec.count, spec.dim)
    return float(np.max(np.abs(arr - reference(spec)) / tolerance(spec)))


@pytest.mark.parametrize("dim", [4, 7, 320])
@pytest.mark.parametrize("flip, shift", [(False, 1), (True, 0), (True, 1), (False, 0), (False, 0.5)])
@pytest.mark.parametrize("scale, max_period", [(1.0, 10000), (1000.0, 10000), (1.0, 1000)])
def test_diffusers_get_timestep_embedding(dim, flip, shift, scale, max_period):
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    if shift >= dim // 2:
        pytest.skip("diffusers divides by dim // 2 - shift")
    timesteps = TIMESTEPS if scale == 1 else tuple(t / 1000 for t in TIMESTEPS)
    got = embeddings.get_timestep_embedding(
        torch.tensor(timesteps), dim, flip_sin_to_cos=flip, downscale_freq_shift=shift,
        scale=scale, max_period=max_period)
    spec = TimestepSpec(timesteps, dim, max_period=max_period, freq_shift=shift, cos_first=flip,
                        scale=scale)
    assert _agree(got, spec) <= 1.0
    assert _agree(got, spec.replace(cos_first=not flip)) > 100        # the order is seen


def test_diffusers_timesteps_module_in_stable_diffusion_and_flux_settings():
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    for module, spec in [
        (embeddings.Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0),
         TimestepSpec(TIMESTEPS, 320, freq_shift=0, cos_first=True)),
        (embeddings.Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=0, scale=1000),
         TimestepSpec(tuple(t / 1000 for t in TIMESTEPS), 256, freq_shift=0, cos_first=True,
                      scale=1000.0)),
        (embeddings.Timesteps(33, flip_sin_to_cos=False, downscale_freq_shift=1),
         TimestepSpec(TIMESTEPS, 33)),
    ]:
        assert _agree(module(torch.tensor(spec.timesteps)), spec) <= 1.0


def test_diffusers_in_bfloat16_timesteps_is_another_embedding():
    """Flux-style pipelines cast the timestep to the model's dtype before embedding it: in
    bfloat16, 999 becomes 1000, and the embedding is no longer the one asked for."""
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    spec = TimestepSpec((999.0, 517.0, 33.0), 256, freq_shift=0, cos_first=True, dtype="bfloat16")
    as_asked = embeddings.get_timestep_embedding(torch.tensor(spec.timesteps), 256, True, 0)
    cast_first = embeddings.get_timestep_embedding(
        torch.tensor(spec.timesteps, dtype=torch.bfloat16), 256, True, 0)
    assert _agree(as_asked.to(torch.bfloat16), spec) <= 1.0
    assert _agree(cast_first.to(torch.bfloat16), spec) > 10


def test_transformers_qwen_omni_is_ddpm_with_scale_1000():
    """Qwen2.5-Omni's DiT SinusPositionEmbedding: sin first, divisor half - 1, scale 1000."""
    modeling = _module("transformers.models.qwen2_5_omni.modeling_qwen2_5_omni")
    timesteps = tuple(t / 1000 for t in TIMESTEPS)
    got = modeling.SinusPositionEmbedding(256)(torch.tensor(timesteps))
    assert _agree(got, TimestepSpec(timesteps, 256, freq_shift=1, scale=1000.0)) <= 1.0


def test_transformers_pi0_is_ddpm_with_period_ratio_and_scale():
    """PI0's periods min_p * (max_p / min_p) ** linspace(0, 1, h) give frequencies
    (2 pi / min_p) * (max_p / min_p) ** (-k / (h - 1)): shift 1, max_period max_p / min_p,
    scale 2 pi / min_p."""
    modeling = _module("transformers.models.pi0.modeling_pi0")
    config = SimpleNamespace(min_period=4e-3, max_period=4.0, dit_config=SimpleNamespace(hidden_size=64))
    embedder = modeling.PI0TimestepEmbeddings(config)
    timesteps = (0.0, 0.1, 0.5, 0.999)
    got = embedder(torch.tensor(timesteps))
    spec = TimestepSpec(timesteps, 64, max_period=4.0 / 4e-3, freq_shift=1, scale=2 * math.pi / 4e-3)
    assert _agree(got, spec) <= 1.0
