"""JAX: the direct formula under jax.jit, on the CPU and on a GPU.

JAX runs in float32 unless x64 is switched on for the whole process, so this
is the seeds' algorithm (angles in float32, error growing with the position)
compiled by XLA into one fused kernel. The start position is an argument of
the compiled function, so XLA cannot fold the table into a constant and every
call computes it.
"""

from __future__ import annotations

from dataclasses import replace

from harness import Spec, register

from ._assemble import EVERY_CONVENTION, assemble

JAX_DTYPES = replace(EVERY_CONVENTION, dtypes=("float16", "bfloat16", "float32"))


def _build(spec: Spec, platform: str):
    import jax
    import jax.numpy as jnp

    device = jax.devices(platform)[0]
    out_dtype = jnp.dtype(spec.dtype)
    k = jnp.arange(spec.n_freq, dtype=jnp.float32)
    inv_freq = spec.scale * jnp.power(jnp.float32(spec.base), -k / spec.denominator)

    def table(start):
        position = (jnp.arange(spec.length, dtype=jnp.float32) + start)[:, None]
        theta = position * inv_freq[None, :]
        return assemble(spec, jnp.sin(theta).astype(out_dtype), jnp.cos(theta).astype(out_dtype),
                        jnp.zeros((spec.length, 1), out_dtype),
                        interleave=lambda a, b: jnp.stack([a, b], axis=2).reshape(spec.length, -1),
                        concat=lambda parts: jnp.concatenate(parts, axis=1))

    compiled = jax.jit(table)          # runs where its (committed) argument lives
    start = jax.device_put(jnp.float32(spec.offset), device)
    return lambda: compiled(start).block_until_ready()


@register(name="jax-jit", backend="jax", supports=JAX_DTYPES)
def build_jax_jit(spec: Spec):
    """The direct formula in float32 angles, fused by jax.jit (XLA) on the CPU."""
    return _build(spec, "cpu")


@register(name="jax-cuda-jit", backend="jax", device="cuda", supports=JAX_DTYPES)
def build_jax_cuda_jit(spec: Spec):
    """The direct formula in float32 angles, fused by jax.jit (XLA) on the GPU."""
    return _build(spec, "gpu")
