"""Triton: one hand-written kernel for every convention, on the GPU.

Each program writes a BLOCK_ROWS x BLOCK_COLS tile: it loads the tile's column
frequencies and phases (impls/_device_columns.py), forms the angles in float64,
reduces them modulo 2 pi in float64, and takes one float32 sine per element
(cos is the sine a quarter turn on). The table is written once and read never,
so the kernel is bounded by the DRAM write. The tile shape is tuned per size
and dtype at the first (untimed) call, which shows in `first_call_s`; later
calls launch the plain kernel with that tile, because triton.autotune's
wrapper adds ~13 us of Python to every launch (measured on an H100).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from harness import Spec, register
from impls._assemble import EVERY_CONVENTION
from impls._device_columns import frequencies_and_phases

HALF_AND_FULL = replace(EVERY_CONVENTION, dtypes=("float16", "bfloat16", "float32", "float64"))
#: (rows, columns, warps) per program: wide tiles for wide tables, tall ones for narrow tables
TILES = ((16, 128, 4), (32, 128, 4), (8, 256, 4), (32, 256, 8), (64, 64, 4))


@functools.cache
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def sincos_table(out_ptr, freq_ptr, phase_ptr, length, d_model, offset,
                     WIDE: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
        col_ok = cols < d_model
        freq = tl.load(freq_ptr + cols, mask=col_ok, other=0.0)
        phase = tl.load(phase_ptr + cols, mask=col_ok, other=0.0)
        position = (rows + offset).to(tl.float64)
        angle = position[:, None] * freq[None, :]
        turns = tl.floor(angle * (0.5 / math.pi) + 0.5)
        reduced = angle - turns * (2 * math.pi) + phase[None, :]
        if WIDE:
            value = tl.sin(reduced)
        else:
            value = tl.sin(reduced.to(tl.float32))
        mask = (rows < length)[:, None] & col_ok[None, :]
        where = out_ptr + rows.to(tl.int64)[:, None] * d_model + cols[None, :]
        tl.store(where, value.to(out_ptr.dtype.element_ty), mask=mask)

    return sincos_table


def _tune(launch, tiles=TILES, calls: int = 10):
    """The tile whose launches run fastest: each compiled and warmed, then `calls` launches
    timed between two device syncs (harness.backends.cuda_driver.synced_clock)."""
    from harness.backends.cuda_driver import synced_clock

    def seconds(tile):
        for _ in range(3):
            launch(tile)
        start = synced_clock()
        for _ in range(calls):
            launch(tile)
        return synced_clock() - start

    return min(tiles, key=seconds)


@register(name="triton-table", backend="triton", device="cuda", supports=HALF_AND_FULL)
def build_triton_table(spec: Spec):
    """One Triton kernel: float64 angle reduced mod 2 pi, one float32 sine per element (tile
    tuned at the first call)."""
    import torch
    import triton

    kernel = _kernel()
    freq, phase = (torch.from_numpy(v).to("cuda") for v in frequencies_and_phases(spec))
    dtype = getattr(torch, spec.dtype)
    shape, wide = (spec.length, spec.d_model), spec.dtype == "float64"
    tuned: list = []

    def launch(tile):
        rows, cols, warps = tile
        out = torch.empty(shape, dtype=dtype, device="cuda")
        grid = (triton.cdiv(spec.length, rows), triton.cdiv(spec.d_model, cols))
        kernel[grid](out, freq, phase, spec.length, spec.d_model, spec.offset, WIDE=wide,
                     BLOCK_ROWS=rows, BLOCK_COLS=cols, num_warps=warps)
        return out

    def table():
        if not tuned:
            tuned.append(_tune(launch))
        return launch(tuned[0])

    return table
