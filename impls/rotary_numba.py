"""Numba: rotary caches and apply as parallel kernels, fused (no cache), cached and unfused.

Why they are fast: no per-element transcendental. Every (position, frequency) gets its cos and
sin by angle addition from the two small float64 tables of _rotary_tables.py (four multiply-adds,
~2 ulp of float64 at any position), the cache kernel writes both copies of each frequency in the
same pass, and the fused apply computes a position's n_freq cos/sin once and rotates every batch
and head row of q and k with them while the row is in cache: one read of q and k, one write of
the outputs, like the fused rotary kernels of flash-attn, Liger and vLLM. Positions need not be
sorted: each one finds its coarse and fine rows by division.

float32 and float64 only: Numba's CPU target has no half-precision arrays.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from harness.core.kinds.rotary import RotarySpec
from harness.core.registry import register
from harness.util.memory import first_touch
from impls._rotary_support import NUMBA
from impls._rotary_tables import pair_slices, split_tables

FASTMATH = {"contract"}   # fuse a*b + c into an FMA; no reassociation, no unsafe math


@functools.cache
def _kernels() -> SimpleNamespace:
    """Compile once per process (numba is imported only here)."""
    import numba

    njit = functools.partial(numba.njit, fastmath=FASTMATH, cache=False)

    @njit
    def sincos_at(i, step, cc, sc, cf, sf, c, s):
        """Scaled cos and sin of position offset + i, every frequency, into c and s (float64)."""
        q = i // step
        r = i - q * step
        for f in range(c.size):
            c[f] = cc[q, f] * cf[r, f] - sc[q, f] * sf[r, f]
            s[f] = sc[q, f] * cf[r, f] + cc[q, f] * sf[r, f]

    @njit
    def rotate_row(x, out, c, s, interleaved):
        """One head row: the pairs of the first 2 len(c) dims rotated, the rest copied."""
        n = c.size
        if interleaved:
            for f in range(n):
                x1, x2 = x[2 * f], x[2 * f + 1]
                out[2 * f] = x1 * c[f] - x2 * s[f]
                out[2 * f + 1] = x2 * c[f] + x1 * s[f]
        else:
            for f in range(n):
                x1, x2 = x[f], x[f + n]
                out[f] = x1 * c[f] - x2 * s[f]
                out[f + n] = x2 * c[f] + x1 * s[f]
        for j in range(2 * n, x.size):
            out[j] = x[j]

    @njit
    def rotate_position(q, k, oq, ok, i, c, s, interleaved):
        for b in range(q.shape[0]):
            for h in range(q.shape[1]):
                rotate_row(q[b, h, i], oq[b, h, i], c, s, interleaved)
                rotate_row(k[b, h, i], ok[b, h, i], c, s, interleaved)

    def chunks(count):
        """(chunks, per chunk): one chunk per thread, so per-thread scratch is allocated once."""
        threads = min(numba.get_num_threads(), count)
        return threads, (count + threads - 1) // threads

    chunks = njit(chunks)

    @njit(parallel=True)
    def cache(out_c, out_s, index, step, cc, sc, cf, sf, interleaved):
        """Row p of the cos/sin cache is position offset + index[p]; both copies in one pass."""
        n = cc.shape[1]
        nchunks, per = chunks(index.size)
        for t in numba.prange(nchunks):
            c, s = np.empty(n), np.empty(n)
            for p in range(t * per, min(index.size, (t + 1) * per)):
                sincos_at(index[p], step, cc, sc, cf, sf, c, s)
                if interleaved:
                    for f in range(n):
                        out_c[p, 2 * f] = c[f]
                        out_c[p, 2 * f + 1] = c[f]
                        out_s[p, 2 * f] = s[f]
                        out_s[p, 2 * f + 1] = s[f]
                else:
                    for f in range(n):
                        out_c[p, f] = c[f]
                        out_c[p, f + n] = c[f]
                        out_s[p, f] = s[f]
                        out_s[p, f + n] = s[f]

    @njit(parallel=True)
    def fused(q, k, oq, ok, index, step, cc, sc, cf, sf, interleaved):
        """cos/sin of each position computed once, used for every batch and head of q and k."""
        n = cc.shape[1]
        seq = q.shape[2]
        nchunks, per = chunks(seq)
        for t in numba.prange(nchunks):
            c, s = np.empty(n), np.empty(n)
            for i in range(t * per, min(seq, (t + 1) * per)):
                sincos_at(index[i], step, cc, sc, cf, sf, c, s)
                rotate_position(q, k, oq, ok, i, c, s, interleaved)

    @njit(parallel=True)
    def from_cache(q, k, oq, ok, rows, cos, sin, interleaved):
        """Rotate by cache rows: cos, sin are the cache's n_freq distinct columns `[rows, n_freq]`."""
        for i in numba.prange(q.shape[2]):
            rotate_position(q, k, oq, ok, i, cos[rows[i]], sin[rows[i]], interleaved)

    return SimpleNamespace(cache=cache, fused=fused, from_cache=from_cache)


class Rotary:
    """One spec's setup: float64 angle-addition tables, the layout, fresh outputs per call."""

    def __init__(self, spec: RotarySpec):
        self.spec, self.kernels = spec, _kernels()
        tables = split_tables(spec)
        self.step = tables.step
        self.tables = tables.cast(np.float64)
        self.interleaved = spec.layout == "interleaved"
        self.first = pair_slices(spec)[0]

    def cache(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin `[len(index), rot]` at positions offset + index."""
        shape, dtype = (index.size, self.spec.rot), self.spec.dtype
        cos, sin = first_touch(np.empty(shape, dtype)), first_touch(np.empty(shape, dtype))
        self.kernels.cache(cos, sin, index, self.step, *self.tables, self.interleaved)
        return cos, sin

    def outputs(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return first_touch(np.empty_like(q)), first_touch(np.empty_like(q))

    def fused(self, q: np.ndarray, k: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        oq, ok = self.outputs(q)
        self.kernels.fused(q, k, oq, ok, index, self.step, *self.tables, self.interleaved)
        return oq, ok

    def from_cache(self, q: np.ndarray, k: np.ndarray, rows: np.ndarray, cos: np.ndarray,
                   sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        oq, ok = self.outputs(q)
        self.kernels.from_cache(q, k, oq, ok, rows, cos, sin, self.interleaved)
        return oq, ok

    def distinct(self, cos: np.ndarray, sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cache's n_freq distinct columns, contiguous: a strided view ('A' layout in Numba)
        would keep the rotation loop from vectorising."""
        return np.ascontiguousarray(cos[:, self.first]), np.ascontiguousarray(sin[:, self.first])


def _inputs(spec: RotarySpec, q: np.ndarray, k: np.ndarray, positions: np.ndarray):
    """q, k in the spec's dtype (C-contiguous) and positions as row indices from offset."""
    cast = [np.ascontiguousarray(x, dtype=spec.dtype) for x in (q, k)]
    return (*cast, np.ascontiguousarray(positions - spec.offset, dtype=np.int64))


def _warmed(call):
    """Call once in setup, so JIT compilation stays out of the timed calls."""
    call()
    return call


@register(name="rotary-numba-cache", backend="numba", workload="cache", supports=NUMBA)
def build_rotary_numba_cache(spec: RotarySpec):
    """cos/sin cache by float64 angle addition, both copies of each frequency in one parallel pass."""
    rotary = Rotary(spec)
    index = np.arange(spec.length, dtype=np.int64)
    return _warmed(lambda: rotary.cache(index))


@register(name="rotary-numba-apply-fused", backend="numba", workload="apply", supports=NUMBA)
def build_rotary_numba_apply_fused(spec: RotarySpec, q, k, positions):
    """One parallel pass, no cache: each position's cos/sin computed once for all batch and heads."""
    rotary = Rotary(spec)
    qx, kx, index = _inputs(spec, q, k, positions)
    return _warmed(lambda: rotary.fused(qx, kx, index))


@register(name="rotary-numba-apply-cached", backend="numba", workload="apply", supports=NUMBA)
def build_rotary_numba_apply_cached(spec: RotarySpec, q, k, positions):
    """Cache of every position built in setup; the call rotates by its rows at the positions."""
    rotary = Rotary(spec)
    qx, kx, rows = _inputs(spec, q, k, positions)
    cos, sin = rotary.distinct(*rotary.cache(np.arange(spec.length, dtype=np.int64)))
    return _warmed(lambda: rotary.from_cache(qx, kx, rows, cos, sin))


@register(name="rotary-numba-apply-unfused", backend="numba", workload="apply", supports=NUMBA)
def build_rotary_numba_apply_unfused(spec: RotarySpec, q, k, positions):
    """HF's two steps as kernels: the cache at the positions, then the rotation by it."""
    rotary = Rotary(spec)
    qx, kx, index = _inputs(spec, q, k, positions)
    rows = np.arange(index.size, dtype=np.int64)

    def apply():
        cos, sin = rotary.distinct(*rotary.cache(index))
        return rotary.from_cache(qx, kx, rows, cos, sin)

    return _warmed(apply)
