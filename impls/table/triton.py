"""Triton: one hand-written kernel for every convention, on the GPU.

Each program writes a BLOCK_ROWS x BLOCK_COLS tile: it loads the tile's column
frequencies and phases (impls/table/_device_columns.py), forms the angles in float64,
reduces them modulo 2 pi in float64, and takes one float32 sine per element
(cos is the sine a quarter turn on). The table is written once and read never,
so the kernel is bounded by the DRAM write. The tile shape is autotuned per
size and dtype at the first (untimed) call, which shows in `first_call_s`.

Measured on an H100 (results/20261123-063516-c16a9a1): the kernel reaches 85% of
a bare fill's bandwidth at 8192 x 1024 float32, but a launch from Python costs
~30 us (Triton 3.6's launcher plus the autotune wrapper), so CuPy's cheaper
launch wins below ~2^24 elements when each call is synchronised. Tuning by
timing launches instead (10 launches per tile) measured the launcher, not the
kernel, and picked slower tiles (27 us instead of 22 us): hence autotune.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

from harness import Spec, register
from ._assemble import EVERY_CONVENTION
from ._device_columns import frequencies_and_phases
from .._triton_device import DEVICE, INTERPRET

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

    if INTERPRET:   # the interpreter times nothing: one tile, passed at the launch
        rows, cols, _ = TILES[0]
        return _FixedTile(sincos_table, {"BLOCK_ROWS": rows, "BLOCK_COLS": cols})
    return triton.autotune(configs=[triton.Config({"BLOCK_ROWS": r, "BLOCK_COLS": c}, num_warps=w)
                                    for r, c, w in TILES], key=["length", "d_model"])(sincos_table)


@dataclass(frozen=True)
class _FixedTile:
    """`kernel[grid](...)` with the tile's constants added: the autotuned kernel's calling form."""

    kernel: Any
    tile: dict

    def __getitem__(self, grid):
        return functools.partial(self.kernel[grid], **self.tile)


@register(name="triton-table", backend="triton", device=DEVICE, supports=HALF_AND_FULL)
def build_triton_table(spec: Spec):
    """One Triton kernel: float64 angle reduced mod 2 pi, one float32 sine per element (autotuned
    tile)."""
    import torch
    import triton

    kernel = _kernel()
    freq, phase = (torch.from_numpy(v).to(DEVICE) for v in frequencies_and_phases(spec))
    dtype = getattr(torch, spec.dtype)
    wide = spec.dtype == "float64"

    def grid(meta):
        return (triton.cdiv(spec.length, meta["BLOCK_ROWS"]),
                triton.cdiv(spec.d_model, meta["BLOCK_COLS"]))

    def table():
        out = torch.empty((spec.length, spec.d_model), dtype=dtype, device=DEVICE)
        kernel[grid](out, freq, phase, spec.length, spec.d_model, spec.offset, WIDE=wide)
        return out

    return table
