"""Numba: rotary caches and apply as parallel kernels, fused (no cache), cached and unfused.

Why they are fast: no per-element transcendental. Every (position, frequency) gets its cos and
sin by angle addition from the two small tables of _tables.py (four multiply-adds; float64
tables for apply and for float64, ~2 ulp of float64 at any position, rounded once to the dtype;
float32 tables for the other caches, ~1.2e-7: the cache is bound by this arithmetic), a block of positions at a time
into a small per-thread table; the cache kernel writes both copies of each frequency from it, and
the fused apply streams every batch and head row of q and k through it (_apply_kernels.py): one
read of q and k, one write of the outputs, like the fused rotary kernels of flash-attn, Liger and
vLLM, in every form they take (FORMS: both layouts walked in their own order, k with fewer heads,
position ids per sequence; `-inplace` rotates q and k where they are). Positions need not be
sorted: each one finds its coarse and fine rows by division.
Fresh outputs are faulted in by the threads that write them; the `-recycled`
variants write into the memory of outputs the caller has let go (harness.util.recycle), which
spares the page faults of a fresh mapping at every call, as numba-angleadd-recycled does.

Every dtype: float16 and bfloat16 are computed in float32 (tables, scratch, rotation) and each
value rounded once as it is stored into uint16 bits (impls/_numba_half.py), handed back as NumPy
float16 or a torch bfloat16 tensor over the same memory, no copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.core.kinds.rotary import ApplyForms, RotarySpec
from harness.core.registry import register
from harness.util.memory import aligned, aligned_owner
from harness.util.recycle import RecycledBuffers
from .._numba_half import HALF_DTYPES, Storage
from ._apply_kernels import apply_kernels
from ._block_rows import block_kernels, supported
from ._kernels import kernels, run
from ._supports import BFLOAT16, NUMBA
from ._tables import pair_slices, split_tables
from ._vector_rows import PAIRED, SPLIT_RANGE, wide_order


#: Fine rows of the cache's angle-addition tables: 16 x n_freq cos and sin (8 KiB at rot 128 in
#: float32) stay in L1 beside the rows being written, where sqrt(length) rows (182 at 32768:
#: 93 KiB) were read from L2; the coarse table, read once a 16-row block, streams.
CACHE_STEP = 16
#: Outputs start on a 64-byte cache line: `np.empty` starts a large array 16 bytes past a page,
#: so with 256-byte rows half the 32-byte stores of a half cache row straddled two lines.
OUTPUT_ALIGN = 64
#: Caches of at least this many bytes (cos and sin: the last-level cache) are written by
#: streaming stores, which skip the read of each line before it is written (`streamed_rows`).
STREAM_FROM_BYTES = 32 << 20
#: Bytes of cos and sin rows a thread computes into its scratch before streaming them out: a
#: few rows, in L1 (8-32 rows measured alike; 64 KiB slower).
SCRATCH_BYTES = 8 << 10
#: What a streaming store's address must be a multiple of (AVX2: 32 bytes).
STREAM_ALIGN = 32


def streamed_rows(cos: np.ndarray, sin: np.ndarray, stream_from: int) -> int:
    """Rows a thread writes into its L1 scratch and copies out by streaming stores
    (impls/grid/_copy.py), or 0 for cached stores: a float32 or half cache (the vector rows;
    float64 keeps its loops) of `stream_from` bytes or more whose scratch blocks all start on
    a 32-byte boundary (a cached store into a line streaming stores also write is very slow).
    Why a scratch: streaming stores straight from the row loop (four line streams a row, two
    rows a step) took 1.7x (float32) to 3-9x (half) the cached loop (docs/fast.md)."""
    row = cos.strides[0]
    rows = max(2, SCRATCH_BYTES // (2 * row)) // 2 * 2
    starts = all(a.ctypes.data % STREAM_ALIGN == 0 for a in (cos, sin)) and rows * row % STREAM_ALIGN == 0
    vector = cos.dtype != np.float64
    return rows if vector and starts and cos.nbytes + sin.nbytes >= stream_from else 0


class Rotary:
    """One spec's setup: the angle-addition tables, the layout, and where outputs come from."""

    def __init__(self, spec: RotarySpec, recycle: bool = False):
        half = spec.dtype in HALF_DTYPES
        self.spec, self.recycle = spec, recycle
        codec = spec.dtype if half else "float32"
        self.kernels, self.apply = kernels(spec.dtype), apply_kernels(codec)
        self.storage = Storage(spec.dtype)
        self.hand = self.storage.result()
        # half dtypes: float32 tables and scratch (~2e-7, far below a half ulp), 16 lanes a vector
        self.work = np.empty(0, np.float32 if half else spec.dtype)
        tables = split_tables(spec)
        self.interleaved = spec.layout == "interleaved"
        # the column order apply's cos/sin rows are in: a bfloat16 "half" row is rotated by
        # 32-bit words of two frequencies each (_bf16_words.py), whole steps in wide_order
        self.order = (wide_order(spec.n_freq) if spec.dtype == "bfloat16" and not self.interleaved
                      else slice(None))
        self.tables = (tables.step, *(np.ascontiguousarray(t[:, self.order])
                                      for t in tables.cast(np.float32 if half else np.float64)))
        # the cache is bound by its per-element arithmetic: float32 tables (1.3e-7 in float32,
        # still `exact`) took it from 2.3x to 1.7x a fill (float64 keeps float64 tables), and
        # CACHE_STEP-row fine tables stay in L1 (docs/fast.md)
        cached = split_tables(spec, CACHE_STEP)
        tables = cached.cast(np.float64 if spec.dtype == "float64" else np.float32)
        if spec.dtype in PAIRED:   # the column order its vector rows read (_vector_rows.wide_order)
            order = wide_order(spec.n_freq)
            tables = tuple(np.ascontiguousarray(t[:, order]) for t in tables)
        self.cache_tables = (cached.step, *tables)
        self.seq_first = spec.qk_layout == "bshd"
        self.first = pair_slices(spec)[0]
        self.buffers: dict = {}
        self.stream_from = STREAM_FROM_BYTES

    def empty(self, shape: tuple[int, ...], part: int) -> np.ndarray:
        """A fresh output starting on a cache line (OUTPUT_ALIGN), its pages faulted in by the
        threads that write them (impls/table/numba_fast.outputs), or with `recycle` the memory
        of one the caller has let go (harness.util.recycle): no page faults on rebuilds."""
        dtype = self.storage.kernel

        def owner() -> np.ndarray:
            return aligned_owner(shape, dtype, OUTPUT_ALIGN)

        def view(memory: np.ndarray) -> np.ndarray:
            return aligned(memory, shape, dtype, OUTPUT_ALIGN)

        if not self.recycle:
            return view(owner())
        key = (shape, part)
        if key not in self.buffers:
            self.buffers[key] = RecycledBuffers(shape, dtype, allocate=owner, view=view)
        return self.buffers[key].take()

    def _bounded(self) -> None:
        """A PAIRED cache rounds by Veltkamp's split (_vector_rows.veltkamp_bf16), exact while
        every value, at most attention_scaling in magnitude, is under SPLIT_RANGE's top."""
        scale = self.spec.attention_scaling
        if self.spec.dtype in PAIRED and not abs(scale) < SPLIT_RANGE[1] / 2:
            raise ValueError(f"attention_scaling must be below 2^110 for a {self.spec.dtype} numba cache, "
                             f"got {scale}")

    def cache(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin `[len(index), rot]` at positions offset + index."""
        self._bounded()
        shape = (index.size, self.spec.rot)
        cos, sin = self.empty(shape, 0), self.empty(shape, 1)
        run(self.kernels.cache, 2 * cos.size, cos, sin, index, self.cache_tables, self.interleaved,
            self.work, streamed_rows(cos, sin, self.stream_from))
        return cos, sin

    def cache_range(self, away: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin of positions offset .. offset + length - 1: a coarse step's rows a call
        (_block_rows.py) where the rows are vector IR and n_freq a whole number of vectors, else
        `cache` over every position. cos and sin are the two halves of one output (one
        recycled buffer to find, not two). `away`: bfloat16 ties rounded away from zero."""
        spec = self.spec
        self._bounded()
        if spec.dtype == "float64" or not supported(spec.n_freq):
            return self.cache(np.arange(spec.length, dtype=np.int64))
        both = self.empty((2, spec.length, spec.rot), 2)
        cos, sin = both[0], both[1]
        kernel = block_kernels(spec.dtype, self.interleaved, spec.n_freq, away)
        run(kernel, both.size, cos, sin, self.cache_tables, streamed_rows(cos, sin, self.stream_from))
        return cos, sin

    def _sweep(self, fill, q, k, ids, tables, in_place: bool = False) -> tuple[np.ndarray, np.ndarray]:
        oq, ok = (q, k) if in_place else (self.empty(q.shape, 0), self.empty(k.shape, 1))
        run(self.apply.sweeps[fill], q.size + k.size, q, k, oq, ok, ids, tables, self.spec.n_freq,
            self.interleaved, self.seq_first, in_place, self.work)
        return oq, ok

    def fused(self, q: np.ndarray, k: np.ndarray, ids: np.ndarray,
              in_place: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """q, k rotated at position ids `[1 or batch, seq]` (rows from offset), no cache."""
        return self._sweep(self.apply.angles, q, k, ids, self.tables, in_place)

    def from_cache(self, q: np.ndarray, k: np.ndarray, rows: np.ndarray, cos: np.ndarray,
                   sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rotate by cache rows `[1 or batch, seq]`: cos, sin are the cache's n_freq distinct
        columns `[rows, n_freq]`."""
        return self._sweep(self.apply.gather, q, k, rows, (cos, sin))

    def result(self, pair: tuple[np.ndarray, np.ndarray]) -> tuple:
        """The two outputs as the dtype's arrays (a view each for the half dtypes, no copy)."""
        return pair if self.storage.kernel == self.work.dtype else (self.hand(pair[0]), self.hand(pair[1]))

    def distinct(self, cos: np.ndarray, sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cache's n_freq distinct columns, contiguous (a strided view, 'A' layout in Numba,
        would keep the rotation loop from vectorising), in the order apply reads (`order`)."""
        return tuple(np.ascontiguousarray(x[:, self.first][:, self.order]) for x in (cos, sin))


def _inputs(spec: RotarySpec, q: Any, k: Any, positions: Any):
    """q, k as the kernels read them (C-contiguous, the dtype's storage: a view of what the call
    was handed when it already is that) and position ids as rows from offset, `[1, seq]` when
    shared by the batch, else `[batch, seq]`."""
    cast = [Storage(spec.dtype).encode(x) for x in (q, k)]
    ids = np.asarray(positions, dtype=np.int64) - spec.offset
    return (*cast, np.ascontiguousarray(ids.reshape(-1, ids.shape[-1])))


def _warmed(rotary: Rotary, spec: RotarySpec, call):
    """Call once in setup on one position of zeros, so JIT compilation stays out of the timed
    calls; the recycled outputs that call made are dropped, so setup keeps no output (bench: a
    cache kept is a lookup)."""
    if spec.length:
        tiny = np.zeros((1, 1, 1, spec.head_dim), np.float32)
        call(tiny, tiny.copy(), np.array([spec.offset], np.int64))
    rotary.buffers.clear()
    return call


def _cache_warmed(rotary: Rotary, call):
    """A cache builder called once in setup (JIT compilation), its recycled outputs dropped."""
    call()
    rotary.buffers.clear()
    return call


@register(name="rotary-numba-cache", backend="numba", workload="cache", supports=NUMBA)
def build_rotary_numba_cache(spec: RotarySpec):
    """cos/sin cache by angle addition (float32 tables; float64 for float64), a coarse step's rows a call, one parallel pass."""
    rotary = Rotary(spec)
    return _cache_warmed(rotary, lambda: rotary.result(rotary.cache_range()))


@register(name="rotary-numba-cache-recycled", backend="numba", workload="cache", supports=NUMBA)
def build_rotary_numba_cache_recycled(spec: RotarySpec):
    """rotary-numba-cache into the memory of caches let go: no page faults, two caches kept."""
    rotary = Rotary(spec, recycle=True)
    return _cache_warmed(rotary, lambda: rotary.result(rotary.cache_range()))


@register(name="rotary-numba-cache-away-recycled", backend="numba", workload="cache", supports=BFLOAT16)
def build_rotary_numba_cache_away_recycled(spec: RotarySpec):
    """rotary-numba-cache-recycled rounding bfloat16 ties away from zero: half an ulp at most, as ties to even, in a third of the integer work."""
    rotary = Rotary(spec, recycle=True)
    return _cache_warmed(rotary, lambda: rotary.result(rotary.cache_range(away=True)))


#: Every form of apply (forms.py): both layouts, k with fewer heads, position ids per sequence.
FORMS = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True)


@register(name="rotary-numba-apply-fused", backend="numba", workload="apply", supports=NUMBA, forms=FORMS)
def build_rotary_numba_apply_fused(spec: RotarySpec):
    """One parallel pass, no cache: each position's cos/sin computed once for all batch and heads."""
    rotary = Rotary(spec)
    return _warmed(rotary, spec, lambda q, k, ids: rotary.result(rotary.fused(*_inputs(spec, q, k, ids))))


@register(name="rotary-numba-apply-fused-recycled", backend="numba", workload="apply", supports=NUMBA,
          forms=FORMS)
def build_rotary_numba_apply_fused_recycled(spec: RotarySpec):
    """rotary-numba-apply-fused into the memory of outputs let go: no page faults, two kept."""
    rotary = Rotary(spec, recycle=True)
    return _warmed(rotary, spec, lambda q, k, ids: rotary.result(rotary.fused(*_inputs(spec, q, k, ids))))


@register(name="rotary-numba-apply-inplace", backend="numba", workload="apply", supports=NUMBA,
          forms=ApplyForms(layouts=FORMS.layouts, gqa=True, batch_positions=True, in_place=True))
def build_rotary_numba_apply_inplace(spec: RotarySpec):
    """rotary-numba-apply-fused in place, as Liger's, FlashAttention's and vLLM's kernels rotate:
    q and k rotated where they lie (the harness hands every call fresh ones)."""
    rotary = Rotary(spec)

    def call(q, k, positions):
        return rotary.result(rotary.fused(*_inputs(spec, q, k, positions), in_place=True))

    return _warmed(rotary, spec, call)


@register(name="rotary-numba-apply-cached", backend="numba", workload="apply", supports=NUMBA, forms=FORMS)
def build_rotary_numba_apply_cached(spec: RotarySpec):
    """Cache of every position built in setup; the call rotates by its rows at the positions."""
    rotary = Rotary(spec)
    cos, sin = rotary.distinct(*rotary.cache(np.arange(spec.length, dtype=np.int64)))

    def apply(q, k, positions):
        qx, kx, rows = _inputs(spec, q, k, positions)
        return rotary.result(rotary.from_cache(qx, kx, rows, cos, sin))

    return _warmed(rotary, spec, apply)


@register(name="rotary-numba-apply-unfused", backend="numba", workload="apply", supports=NUMBA, forms=FORMS)
def build_rotary_numba_apply_unfused(spec: RotarySpec):
    """HF's two steps as kernels: the cache at the position ids, then the rotation by it."""
    rotary = Rotary(spec)

    def apply(q, k, positions):
        qx, kx, ids = _inputs(spec, q, k, positions)
        index, rows = ids.reshape(-1), np.arange(ids.size, dtype=np.int64).reshape(ids.shape)
        cos, sin = rotary.distinct(*rotary.cache(index))
        return rotary.result(rotary.from_cache(qx, kx, rows, cos, sin))

    return _warmed(rotary, spec, apply)
