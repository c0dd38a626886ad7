"""Real libraries' sinusoidal tables, each rebuilt from its published formula in NumPy.

Libraries disagree on layout, frequency schedule, sin/cos order, first
position and odd widths; loading a checkpoint under the wrong one silently
breaks a model. Each function below follows its library's own steps
(`log_timescale_increment`, `exp`, the `2 * (j // 2) / dim` exponent, masks,
padding) in the library's working precision, so that `verify` proves the
mapping onto a `Spec` (documented in each factory and in docs/conventions.md)
rather than re-deriving the reference.

Every function takes `positions` (integer array): the rows the library
produces for a sequence, i.e. its start parameter (t2t/keras-hub
`start_index`, fairseq `padding_idx + 1`, Marian `past_key_values_length`,
Whisper's decoder `offset`, diffusers' timesteps) already applied. Evaluating
rows directly, instead of slicing a table built from position 0, keeps a huge
offset cheap.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from harness import Spec, Supports, register

Limit = Callable[[Spec], Optional[str]]


# -- what each library can produce ------------------------------------------------

@dataclass(frozen=True)
class LibrarySupports:
    """The Spec fields a library exposes (`covers`) plus limits its formula imposes.

    Limits are checked first: for d_model = 2 "the formula divides by zero" is the
    reason a user needs, not "freq_shift=0 not supported" (which the Spec forces there).
    """

    library: str
    covers: Supports
    limits: tuple[Limit, ...] = ()

    def __call__(self, spec: Spec) -> Optional[str]:
        for check in (*self.limits, self.covers):
            reason = check(spec)
            if reason:
                return f"{self.library}: {reason}"
        return None

    def describe(self) -> str:
        notes = [(limit.__doc__ or "").strip() for limit in self.limits]
        return " ".join([self.covers.describe(), *[n for n in notes if n]])


def _two_pairs(spec: Spec) -> Optional[str]:
    """d>=4"""
    if spec.d_model // 2 < 2:
        return ("d_model must be >= 4: the half_dim - 1 schedule divides by zero "
                f"with one sin/cos pair, got {spec.d_model}")
    return None


def _offset_from_one(spec: Spec) -> Optional[str]:
    """offset>=1"""
    if spec.offset < 1:
        return "positions start at padding_idx + 1, so offset (= padding_idx + 1) must be >= 1"
    return None


def _t2t_schedule(spec: Spec) -> Optional[str]:
    """shift=1 (0 when d<4)"""
    want = 1 if spec.d_model // 2 >= 2 else 0
    if spec.freq_shift != want:
        return (f"divides by max(num_timescales - 1, 1), i.e. freq_shift={want} for "
                f"d_model={spec.d_model}, got {spec.freq_shift}")
    return None


def _cos_first_only(spec: Spec) -> Optional[str]:
    """cos_first only"""
    return None if spec.cos_first else "the cos block comes first: cos_first=True only"


def _positions_fit_dtype(spec: Spec) -> Optional[str]:
    """f16 positions<=65504"""
    top = float(np.finfo(spec.dtype).max) if spec.dtype == "float16" else math.inf
    if spec.max_position > top:
        return f"positions are cast to {spec.dtype}, which overflows past {top:g}"
    return None


def _float16_angles(spec: Spec) -> Optional[str]:
    """f16: angles in f16 (finding)"""
    if spec.dtype == "float16":
        return ("a float16 layer forms its positions and angles in float16: another table, not a "
                "rounding (1.79 off at 4096 x 64 against the angle contract's 0.005; "
                "docs/libraries.md)")
    return None


def _positions(spec: Spec) -> np.ndarray:
    return np.arange(spec.offset, spec.offset + spec.length, dtype=np.int64)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _pad_odd(table: np.ndarray, width: int) -> np.ndarray:
    """Append the zero column an odd `width` gets in t2t, fairseq and diffusers."""
    if width % 2 == 0:
        return table
    return np.concatenate([table, np.zeros((table.shape[0], 1), table.dtype)], axis=1)


def _paper_angles(positions: np.ndarray, dim: int) -> np.ndarray:
    """XLM's float64 `pos / np.power(10000, 2 * (j // 2) / dim)` for every column j."""
    j = np.arange(dim)
    return positions.astype(np.float64)[:, None] / np.power(10000.0, 2 * (j // 2) / dim)[None, :]


# -- the libraries' formulas -------------------------------------------------------

def t2t_timing_signal(positions: np.ndarray, channels: int, min_timescale: float = 1.0,
                      max_timescale: float = 1.0e4, dtype: str = "float32") -> np.ndarray:
    """tensor2tensor `common_attention.get_timing_signal_1d` (float32 in TF)."""
    _require(channels >= 2, f"channels must be >= 2, got {channels}")
    _require(min_timescale > 0 and max_timescale > 0 and min_timescale != max_timescale,
             "min_timescale and max_timescale must be > 0 and differ, "
             f"got {min_timescale}, {max_timescale}")
    num_timescales = channels // 2
    log_timescale_increment = (math.log(float(max_timescale) / float(min_timescale))
                               / max(num_timescales - 1, 1))
    steps = np.arange(num_timescales).astype(dtype)
    inv_timescales = np.asarray(min_timescale, dtype) * np.exp(steps * -log_timescale_increment)
    scaled_time = positions.astype(dtype)[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return _pad_odd(signal, channels)


def fairseq_embedding(positions: np.ndarray, embedding_dim: int, padding_idx: Optional[int],
                      dtype: str = "float32") -> np.ndarray:
    """fairseq `SinusoidalPositionalEmbedding.get_embedding` at `positions`; padding row zeroed."""
    half_dim = embedding_dim // 2
    _require(half_dim >= 2, "embedding_dim must be >= 4 (fairseq divides by half_dim - 1), "
             f"got {embedding_dim}")
    step = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim).astype(dtype) * -step)
    emb = positions.astype(dtype)[:, None] * emb[None, :]
    emb = _pad_odd(np.concatenate([np.sin(emb), np.cos(emb)], axis=1), embedding_dim)
    if padding_idx is not None:
        emb[positions == padding_idx, :] = 0
    return emb


def diffusers_timestep_embedding(timesteps: np.ndarray, embedding_dim: int,
                                 flip_sin_to_cos: bool = False, downscale_freq_shift: float = 1,
                                 scale: float = 1, max_period: float = 10000,
                                 dtype: str = "float32") -> np.ndarray:
    """diffusers `get_timestep_embedding` (float32 in torch)."""
    half_dim = embedding_dim // 2
    _require(half_dim - downscale_freq_shift > 0,
             f"downscale_freq_shift must be < embedding_dim // 2 = {half_dim}, "
             f"got {downscale_freq_shift} (the exponent divides by half_dim - shift)")
    exponent = -math.log(max_period) * np.arange(half_dim).astype(dtype)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = timesteps.astype(dtype)[:, None] * np.exp(exponent)[None, :]
    emb = np.asarray(scale, dtype) * emb
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1)
    if flip_sin_to_cos:
        emb = np.concatenate([emb[:, half_dim:], emb[:, :half_dim]], axis=1)
    return _pad_odd(emb, embedding_dim)


def guided_diffusion_timestep_embedding(timesteps: np.ndarray, dim: int, max_period: float = 10000,
                                        dtype: str = "float32") -> np.ndarray:
    """GLIDE / guided-diffusion / DiT `timestep_embedding`: cos block first, `/ half` schedule."""
    half = dim // 2
    freqs = np.exp(-math.log(max_period) * np.arange(half).astype(dtype) / half)
    args = timesteps.astype(dtype)[:, None] * freqs[None]
    return _pad_odd(np.concatenate([np.cos(args), np.sin(args)], axis=1), dim)


def xlm_sinusoidal_embeddings(positions: np.ndarray, dim: int,
                              dtype: str = "float32") -> np.ndarray:
    """XLM / DistilBERT `create_sinusoidal_embeddings`: float64 angles, sin even / cos odd."""
    position_enc = _paper_angles(positions, dim)
    out = np.empty(position_enc.shape, dtype=dtype)
    out[:, 0::2] = np.sin(position_enc[:, 0::2])
    out[:, 1::2] = np.cos(position_enc[:, 1::2])
    return out


def marian_sinusoidal_embeddings(positions: np.ndarray, dim: int,
                                 dtype: str = "float32") -> np.ndarray:
    """Marian `_init_weight`: XLM's angles, sin columns first up to the sentinel, then cos."""
    position_enc = _paper_angles(positions, dim)
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = np.empty(position_enc.shape, dtype=dtype)
    out[:, :sentinel] = np.sin(position_enc[:, 0::2])
    out[:, sentinel:] = np.cos(position_enc[:, 1::2])
    return out


def keras_hub_sine_position_encoding(positions: np.ndarray, hidden_size: int,
                                     max_wavelength: float = 10000,
                                     dtype: str = "float32") -> np.ndarray:
    """keras-hub `SinePositionEncoding.call`: min_freq ** (2 * (i // 2) / d), sin/cos masks."""
    f = np.dtype(dtype).type
    min_freq = f(1 / max_wavelength)
    index = np.arange(hidden_size)
    timescales = np.power(min_freq, (2 * (index // 2)).astype(dtype) / f(hidden_size))
    angles = positions.astype(dtype)[:, None] * timescales[None, :]
    cos_mask = (index % 2).astype(dtype)
    sin_mask = 1 - cos_mask
    return np.sin(angles) * sin_mask + np.cos(angles) * cos_mask


def whisper_sinusoids(positions: np.ndarray, channels: int, max_timescale: float = 10000,
                      dtype: str = "float32") -> np.ndarray:
    """Whisper `sinusoids` rows at `positions` (the decoder slices [offset : offset + n])."""
    _require(channels % 2 == 0, f"channels must be even (whisper asserts it), got {channels}")
    _require(channels >= 4, "channels must be >= 4 (whisper divides by channels // 2 - 1), "
             f"got {channels}")
    log_timescale_increment = float(np.log(max_timescale)) / (channels // 2 - 1)
    inv_timescales = np.exp(-log_timescale_increment * np.arange(channels // 2).astype(dtype))
    scaled_time = positions.astype(dtype)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


def pytorch_tutorial_encoding(positions: np.ndarray, d_model: int,
                              dtype: str = "float32") -> np.ndarray:
    """PyTorch tutorial / Annotated Transformer `PositionalEncoding`: exp(2i * -ln(10000)/d)."""
    _require(d_model % 2 == 0,
             f"d_model must be even (the tutorial's 1::2 slice fails), got {d_model}")
    div_term = np.exp(np.arange(0, d_model, 2).astype(dtype) * (-math.log(10000.0) / d_model))
    position = positions.astype(dtype)[:, None]
    pe = np.zeros((len(positions), d_model), dtype=dtype)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


# -- registered: each maps a Spec onto the library's parameters ---------------------

#: Correctness references, not candidates: a sweep times them only when --only names them.
register = functools.partial(register, reference=True)

#: The libraries compute in float32 (XLM and Marian in float64, then cast to float32);
#: keras-hub follows the layer's compute dtype (float16 under mixed precision).
F32 = ("float32",)
KERAS_DTYPES = ("float16", "float32", "float64")


@register(name="lib-tensor2tensor", backend="numpy", supports=LibrarySupports(
    "tensor2tensor", Supports(layouts=("concat",), dtypes=F32, odd=("pad",), scale=True),
    (_t2t_schedule,)))
def build_t2t(spec: Spec):
    """tensor2tensor get_timing_signal_1d (concat, half-1 schedule, odd width zero-padded).

    min_timescale = scale, max_timescale = base * scale, start_index = offset.
    """
    positions = _positions(spec)
    return lambda: t2t_timing_signal(positions, spec.d_model, min_timescale=spec.scale,
                                     max_timescale=spec.base * spec.scale, dtype=spec.dtype)


@register(name="lib-fairseq", backend="numpy", supports=LibrarySupports(
    "fairseq",
    Supports(layouts=("concat",), dtypes=F32, freq_shifts=(1,), base=False, odd=("pad",)),
    (_two_pairs, _offset_from_one)))
def build_fairseq(spec: Spec):
    """fairseq SinusoidalPositionalEmbedding (concat, half-1 schedule, base 10000, odd zero-padded).

    Tokens sit at positions padding_idx + 1, padding_idx + 2, ...: padding_idx = offset - 1, so
    the zeroed padding row lies just before the table (fairseq's default padding_idx=1: offset 2).
    """
    positions = _positions(spec)
    return lambda: fairseq_embedding(positions, spec.d_model, padding_idx=spec.offset - 1,
                                     dtype=spec.dtype)


@register(name="lib-diffusers", backend="numpy", supports=LibrarySupports(
    "diffusers",
    Supports(layouts=("concat",), dtypes=F32, cos_first=True, odd=("pad",), scale=True)))
def build_diffusers(spec: Spec):
    """diffusers get_timestep_embedding (concat, odd width zero-padded).

    flip_sin_to_cos = cos_first, downscale_freq_shift = freq_shift, scale = scale,
    max_period = base, timesteps = offset .. offset + length - 1.
    """
    timesteps = _positions(spec)
    return lambda: diffusers_timestep_embedding(
        timesteps, spec.d_model, flip_sin_to_cos=spec.cos_first,
        downscale_freq_shift=spec.freq_shift, scale=spec.scale, max_period=spec.base,
        dtype=spec.dtype)


@register(name="lib-guided-diffusion", backend="numpy", supports=LibrarySupports(
    "guided-diffusion",
    Supports(layouts=("concat",), dtypes=F32, freq_shifts=(0,), cos_first=True, odd=("pad",)),
    (_cos_first_only,)))
def build_guided_diffusion(spec: Spec):
    """GLIDE / ADM / DiT timestep_embedding (concat, cos first, paper schedule, odd zero-padded).

    max_period = base, timesteps = offset .. offset + length - 1.
    """
    timesteps = _positions(spec)
    return lambda: guided_diffusion_timestep_embedding(timesteps, spec.d_model,
                                                       max_period=spec.base, dtype=spec.dtype)


@register(name="lib-xlm", backend="numpy", supports=LibrarySupports(
    "XLM/DistilBERT", Supports(layouts=("interleaved",), dtypes=F32, freq_shifts=(0,),
                               base=False, odd=("extend",))))
def build_xlm(spec: Spec):
    """XLM / DistilBERT create_sinusoidal_embeddings (interleaved, paper schedule, odd 'extend').

    Base 10000 is fixed; offset = the first position_ids value.
    """
    positions = _positions(spec)
    return lambda: xlm_sinusoidal_embeddings(positions, spec.d_model, dtype=spec.dtype)


@register(name="lib-marian", backend="numpy", supports=LibrarySupports(
    "Marian",
    Supports(layouts=("concat",), dtypes=F32, freq_shifts=(0,), base=False, odd=("extend",))))
def build_marian(spec: Spec):
    """HF Marian sinusoidal embedding (concat, paper schedule, odd 'extend').

    Base 10000 is fixed; offset = past_key_values_length.
    """
    positions = _positions(spec)
    return lambda: marian_sinusoidal_embeddings(positions, spec.d_model, dtype=spec.dtype)


@register(name="lib-keras-hub", backend="numpy", supports=LibrarySupports(
    "keras-hub", Supports(layouts=("interleaved",), dtypes=KERAS_DTYPES, freq_shifts=(0,),
                          odd=("extend",)), (_positions_fit_dtype, _float16_angles)))
def build_keras_hub(spec: Spec):
    """keras-hub SinePositionEncoding (interleaved by sin/cos masks, paper schedule, odd 'extend').

    max_wavelength = base, start_index = offset, compute dtype = dtype.
    """
    positions = _positions(spec)
    return lambda: keras_hub_sine_position_encoding(positions, spec.d_model,
                                                    max_wavelength=spec.base, dtype=spec.dtype)


@register(name="lib-whisper", backend="numpy", supports=LibrarySupports(
    "Whisper", Supports(layouts=("concat",), dtypes=F32, freq_shifts=(1,)), (_two_pairs,)))
def build_whisper(spec: Spec):
    """Whisper sinusoids (concat, half-1 schedule, odd width refused).

    max_timescale = base; offset = the decoder's kv-cache offset into the table.
    """
    positions = _positions(spec)
    return lambda: whisper_sinusoids(positions, spec.d_model, max_timescale=spec.base,
                                     dtype=spec.dtype)


@register(name="lib-pytorch-tutorial", backend="numpy", supports=LibrarySupports(
    "PyTorch tutorial", Supports(layouts=("interleaved",), dtypes=F32, freq_shifts=(0,),
                                 base=False, offset=False)))
def build_pytorch_tutorial(spec: Spec):
    """PyTorch tutorial / Annotated Transformer PositionalEncoding (interleaved, odd refused).

    Base 10000 is fixed and the table is always read from position 0 (offset 0).
    """
    positions = _positions(spec)
    return lambda: pytorch_tutorial_encoding(positions, spec.d_model, dtype=spec.dtype)
