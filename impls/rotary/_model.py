"""Rotary as model code writes it, once for NumPy, torch and TensorFlow.

The naive builders are transformers' Llama rotary (float32 `inv_freq[None] * positions[:, None]`,
`emb = cat(freqs, freqs)`, `cos() * attention_scaling`, cast; `q * cos + rotate_half(q) * sin`)
and GPT-J's (each frequency repeated twice in a row, `rotate_every_two`). The fast cache combines
the angle-addition tables of _tables.py and writes its n_freq distinct columns twice. The
three libraries differ only in a few spellings, which `ModelOps` holds, so the formulas are
written once and a mistake in them shows on every backend alike; `register_model_code` registers
a library's three (cache, fast cache, apply) from its module, so they are written once too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from harness import register

from ._tables import SplitTables, split_tables, work_dtype


@dataclass(frozen=True)
class ModelOps:
    """The calls model code spells differently in each array library (on one device)."""

    asarray: Callable[[np.ndarray, str], Any]    # a NumPy array -> the library's, in a dtype
    arange: Callable[[int, int, str], Any]       # start, stop, dtype
    cat: Callable[[list], Any]                   # along the last axis
    interleave: Callable[[Any, Any], Any]        # a0 b0 a1 b1 ... along the last axis
    repeat2: Callable[[Any], Any]                # each entry twice in a row along the last axis
    reshape: Callable[[Any, tuple], Any]
    cast: Callable[[Any, str], Any]
    cos: Callable[[Any], Any]
    sin: Callable[[Any], Any]


def numpy_ops() -> ModelOps:
    def interleave(a, b):
        return np.stack([a, b], axis=-1).reshape(*a.shape[:-1], -1)

    return ModelOps(asarray=np.asarray, arange=lambda a, b, d: np.arange(a, b, dtype=d),
                    cat=lambda xs: np.concatenate(xs, axis=-1), interleave=interleave,
                    repeat2=lambda x: np.repeat(x, 2, axis=-1), reshape=np.reshape,
                    cast=lambda x, d: x.astype(d, copy=False), cos=np.cos, sin=np.sin)


def torch_ops(device: str) -> ModelOps:
    import torch

    def asarray(x, dtype):
        return torch.from_numpy(np.ascontiguousarray(x)).to(device=device, dtype=getattr(torch, dtype))

    return ModelOps(asarray=asarray,
                    arange=lambda a, b, d: torch.arange(a, b, dtype=getattr(torch, d), device=device),
                    cat=lambda xs: torch.cat(xs, dim=-1),
                    interleave=lambda a, b: torch.stack([a, b], dim=-1).flatten(-2),
                    repeat2=lambda x: torch.repeat_interleave(x, 2, dim=-1), reshape=torch.reshape,
                    cast=lambda x, d: x.to(getattr(torch, d)), cos=torch.cos, sin=torch.sin)


def tf_ops() -> ModelOps:
    import tensorflow as tf

    def interleave(a, b):
        stacked = tf.stack([a, b], axis=-1)
        return tf.reshape(stacked, tf.concat([tf.shape(a)[:-1], [-1]], axis=0))

    return ModelOps(asarray=lambda x, d: tf.cast(tf.constant(x), getattr(tf, d)),
                    arange=lambda a, b, d: tf.range(a, b, dtype=getattr(tf, d)),
                    cat=lambda xs: tf.concat(xs, axis=-1), interleave=interleave,
                    repeat2=lambda x: tf.repeat(x, 2, axis=-1), reshape=tf.reshape,
                    cast=lambda x, d: tf.cast(x, getattr(tf, d)), cos=tf.cos, sin=tf.sin)


def _spread(ops: ModelOps, spec: Any, distinct: Any) -> Any:
    """n_freq distinct columns -> the layout's rot columns (each frequency twice)."""
    return ops.cat([distinct, distinct]) if spec.layout == "half" else ops.interleave(distinct, distinct)


def model_cache(ops: ModelOps, spec: Any, inv_freq: Any, positions: Any) -> tuple[Any, Any]:
    """transformers' / GPT-J's cos and sin `[len(positions), rot]` in spec.dtype, from angles in
    the work dtype (float32 unless the spec is float64)."""
    freqs = positions[:, None] * inv_freq[None, :]
    emb = ops.cat([freqs, freqs]) if spec.layout == "half" else ops.repeat2(freqs)
    scale = spec.attention_scaling
    return ops.cast(ops.cos(emb) * scale, spec.dtype), ops.cast(ops.sin(emb) * scale, spec.dtype)


def rotate_half(ops: ModelOps, x: Any, n: int) -> Any:
    return ops.cat([-x[..., n:], x[..., :n]])


def rotate_every_two(ops: ModelOps, x: Any) -> Any:
    return ops.interleave(-x[..., 1::2], x[..., ::2])


def model_apply(ops: ModelOps, spec: Any, x: Any, cos: Any, sin: Any) -> Any:
    """x * cos + rotate(x) * sin on the first rot dims, the rest passed through (concatenated)."""
    partial = spec.rot < spec.head_dim
    head = x[..., :spec.rot] if partial else x
    turned = rotate_half(ops, head, spec.n_freq) if spec.layout == "half" else rotate_every_two(ops, head)
    out = head * cos + turned * sin
    return ops.cat([out, x[..., spec.rot:]]) if partial else out


def build_model_cache(ops: ModelOps, spec: Any) -> Callable[[], tuple[Any, Any]]:
    """The model's cache builder: inv_freq is setup (a registered buffer), the rest per call."""
    work = work_dtype(spec)
    inv_freq = ops.asarray(spec.inv_freq(), work)
    start, stop = spec.offset, spec.offset + spec.length
    return lambda: model_cache(ops, spec, inv_freq, ops.arange(start, stop, work))


def build_model_apply(ops: ModelOps, spec: Any) -> Callable[..., tuple[Any, Any]]:
    """HF's forward: the cache at the position ids (rotary_emb(x, position_ids)), then apply."""
    work = work_dtype(spec)
    inv_freq = ops.asarray(spec.inv_freq(), work)

    def apply(q: Any, k: Any, positions: Any) -> tuple[Any, Any]:
        cos, sin = model_cache(ops, spec, inv_freq, ops.cast(positions, work))
        return model_apply(ops, spec, q, cos, sin), model_apply(ops, spec, k, cos, sin)

    return apply


def library_tables(ops: ModelOps, spec: Any) -> tuple[Any, ...]:
    """The angle-addition tables in the library and work dtype, shaped to broadcast
    (coarse `[n_coarse, 1, n_freq]`, fine `[1, step, n_freq]`)."""
    tables: SplitTables = split_tables(spec)
    cc, sc, cf, sf = (ops.asarray(t, work_dtype(spec)) for t in tables.cast(np.float64))
    return cc[:, None], sc[:, None], cf[None], sf[None]


def build_fast_cache(ops: ModelOps, spec: Any) -> Callable[[], tuple[Any, Any]]:
    """cos/sin of the n_freq distinct columns by angle addition, cast, then written twice."""
    cc, sc, cf, sf = library_tables(ops, spec)
    n, length = spec.n_freq, spec.length

    def cache():
        cos = ops.reshape(cc * cf - sc * sf, (-1, n))[:length]
        sin = ops.reshape(sc * cf + cc * sf, (-1, n))[:length]
        return (_spread(ops, spec, ops.cast(cos, spec.dtype)),
                _spread(ops, spec, ops.cast(sin, spec.dtype)))

    return cache


def register_model_code(prefix: str, backend: str, ops: Callable[[], ModelOps], supports: Any,
                        module: str, spelled: str) -> None:
    """Register `{prefix}-cache`, `-cache-fast` and `-apply-unfused`: the builders above in one
    library's `ops`, as written in `module` (`spelled`: in whose ops, for their docs)."""
    def cache(spec: Any):
        return build_model_cache(ops(), spec)

    def cache_fast(spec: Any):
        return build_fast_cache(ops(), spec)

    def apply_unfused(spec: Any):
        return build_model_apply(ops(), spec)

    for factory, suffix, doc in (
            (cache, "cache", f"Model code's cache{spelled}: float32 angles, cat(freqs, freqs) or repeat, "
                             "cos/sin of every column."),
            (cache_fast, "cache-fast", f"n_freq distinct columns by float64-table angle addition{spelled}, "
                                       "written twice: accurate at any position."),
            (apply_unfused, "apply-unfused", f"HF's apply{spelled}: the model's cache at the positions, "
                                             "then x * cos + rotate_half(x) * sin.")):
        factory.__module__, factory.__doc__ = module, doc
        workload = suffix.split("-")[0]
        register(name=f"{prefix}-{suffix}", backend=backend, workload=workload, supports=supports)(factory)
