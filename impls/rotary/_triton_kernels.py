"""The Triton kernels of impls/rotary/triton.py (registers nothing; imported only by its
factories, so a machine without triton still imports impls).

They live at module level because a @triton.jit kernel finds the jit functions it calls among
its module's globals: helpers defined inside a factory are invisible to it.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

@triton.jit
def cos_sin(position, inv_freq, scale, WIDE: tl.constexpr):
    """cos, sin `[positions, freqs]` times scale: float64 angle reduced mod 2 pi, then one
    float32 (WIDE: float64) cos and sin; scale (float64) multiplies before one rounding."""
    angle = position[:, None] * inv_freq[None, :]
    turns = tl.floor(angle * (0.5 / math.pi) + 0.5)
    reduced = angle - turns * (2 * math.pi)
    if not WIDE:
        reduced = reduced.to(tl.float32)
    c = tl.cos(reduced) * scale
    s = tl.sin(reduced) * scale
    if not WIDE:
        c, s = c.to(tl.float32), s.to(tl.float32)
    return c, s

@triton.jit
def rotary_cache(cos_ptr, sin_ptr, inv_freq_ptr, scale_ptr, length, offset, n_freq,
                 INTERLEAVED: tl.constexpr, WIDE: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_F: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    freqs = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    row_ok, f_ok = rows < length, freqs < n_freq
    inv_freq = tl.load(inv_freq_ptr + freqs, mask=f_ok, other=0.0)
    position = (rows.to(tl.int64) + offset).to(tl.float64)
    c, s = cos_sin(position, inv_freq, tl.load(scale_ptr), WIDE)
    c, s = c.to(cos_ptr.dtype.element_ty), s.to(sin_ptr.dtype.element_ty)
    start = rows.to(tl.int64)[:, None] * (2 * n_freq)
    if INTERLEAVED:   # columns 2f, 2f + 1: one contiguous store of the pairs
        cols = tl.program_id(1) * (2 * BLOCK_F) + tl.arange(0, 2 * BLOCK_F)
        mask = row_ok[:, None] & (cols < 2 * n_freq)[None, :]
        tl.store(cos_ptr + start + cols[None, :], tl.interleave(c, c), mask=mask)
        tl.store(sin_ptr + start + cols[None, :], tl.interleave(s, s), mask=mask)
    else:             # columns f and n + f: two contiguous stores
        mask = row_ok[:, None] & f_ok[None, :]
        where = start + freqs[None, :]
        tl.store(cos_ptr + where, c, mask=mask)
        tl.store(cos_ptr + where + n_freq, c, mask=mask)
        tl.store(sin_ptr + where, s, mask=mask)
        tl.store(sin_ptr + where + n_freq, s, mask=mask)

@triton.jit
def rotate(x_ptr, out_ptr, start, ok, c, s, n_freq, rot, head_dim,
           INTERLEAVED: tl.constexpr, TAIL: tl.constexpr,
           BLOCK_S: tl.constexpr, BLOCK_F: tl.constexpr, BLOCK_T: tl.constexpr):
    """One (batch, head) slice of a block of positions: start `[BLOCK_S, 1]` int64 offsets
    of its rows, ok `[BLOCK_S, 1]` which rows exist; computes in c's dtype."""
    freqs = tl.arange(0, BLOCK_F)
    if INTERLEAVED:   # load the pairs contiguously and split them in registers
        cols = tl.arange(0, 2 * BLOCK_F)[None, :]
        mask = ok & (cols < rot)
        x = tl.load(x_ptr + start + cols, mask=mask, other=0.0).to(c.dtype)
        x0, x1 = tl.split(tl.reshape(x, [BLOCK_S, BLOCK_F, 2]))
        out = tl.interleave(x0 * c - x1 * s, x1 * c + x0 * s)
        tl.store(out_ptr + start + cols, out.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        mask = ok & (freqs < n_freq)[None, :]
        first = start + freqs[None, :]
        x1 = tl.load(x_ptr + first, mask=mask, other=0.0).to(c.dtype)
        x2 = tl.load(x_ptr + first + n_freq, mask=mask, other=0.0).to(c.dtype)
        tl.store(out_ptr + first, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty), mask=mask)
        tl.store(out_ptr + first + n_freq, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty),
                 mask=mask)
    if TAIL:          # dims rot .. head_dim pass through
        tail = rot + tl.arange(0, BLOCK_T)[None, :]
        tail_mask = ok & (tail < head_dim)
        tl.store(out_ptr + start + tail, tl.load(x_ptr + start + tail, mask=tail_mask),
                 mask=tail_mask)

@triton.jit
def rotary_apply(q_ptr, k_ptr, oq_ptr, ok_ptr, pos_ptr, inv_freq_ptr, scale_ptr,
                 seq, q_heads, k_heads, head_dim, n_freq, rot,
                 q_batch, q_head, q_seq, k_batch, k_head, k_seq, pos_batch,
                 INTERLEAVED: tl.constexpr, WIDE: tl.constexpr, TAIL: tl.constexpr,
                 ROWS: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_F: tl.constexpr,
                 BLOCK_T: tl.constexpr):
    """Axis 0: blocks of positions; axis 1: the batch; axis 2: groups of ROWS heads, q's heads
    then k's. q, k and their outputs are addressed by strides (batch, head, seq; head_dim is
    contiguous), so heads-first and sequence-first memory are one kernel, and an output may be
    its input (in place: each element is read before the same program writes it). Position ids
    are `[batch, seq]` with stride pos_batch (0: one `[seq]` row shared by the batch)."""
    b = tl.program_id(1).to(tl.int64)
    at = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    at_ok = at < seq
    position = tl.load(pos_ptr + b * pos_batch + at, mask=at_ok, other=0).to(tl.float64)
    freqs = tl.arange(0, BLOCK_F)
    inv_freq = tl.load(inv_freq_ptr + freqs, mask=freqs < n_freq, other=0.0)
    c, s = cos_sin(position, inv_freq, tl.load(scale_ptr), WIDE)
    rows = at.to(tl.int64)[:, None]
    for i in range(ROWS):
        h = tl.program_id(2) * ROWS + i
        is_q = h < q_heads
        hk = (h - q_heads).to(tl.int64)
        # the row's tensor (q, or k past q's heads) and where its positions start
        start = tl.where(is_q, b * q_batch + h.to(tl.int64) * q_head, b * k_batch + hk * k_head)
        step = tl.where(is_q, q_seq, k_seq)
        x_ptr = tl.where(is_q, q_ptr, k_ptr) + start
        out_ptr = tl.where(is_q, oq_ptr, ok_ptr) + start
        # a row of positions exists if it is in seq and its head is (an int limit, not bool &
        # scalar: the interpreter's bool & 0-d bool is int32, not a mask)
        ok = (at < seq * (h < q_heads + k_heads).to(tl.int32))[:, None]
        rotate(x_ptr, out_ptr, rows * step, ok, c, s, n_freq, rot, head_dim,
               INTERLEAVED, TAIL, BLOCK_S, BLOCK_F, BLOCK_T)
