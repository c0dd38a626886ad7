"""Half-precision outputs from Numba kernels: float32 math, one rounding, stored as uint16 bits.

Why: Numba's CPU target has no float16 or bfloat16 arrays, and torch's CPU half arithmetic
made the half-precision caches 8-9x a bare write (docs/fast.md). So a kernel computes in
float32 and stores each value's 16-bit pattern into a `uint16` buffer, rounded once to the
nearest (ties to even); the buffer is then handed back without a copy, as NumPy float16 or as a
torch bfloat16 tensor over the same memory (`Storage`).

- float16: LLVM's `fptrunc` to half and `fpext` back (F16C's vcvtps2ph / vcvtph2ps, vectorised
  by LLVM): IEEE round-to-nearest-even, subnormals, overflow to inf and NaN as NumPy's cast.
- bfloat16: the upper 16 bits of the float32 after adding 0x7FFF plus the lowest kept bit
  (round to nearest even; the same as torch's conversion), NaN kept quiet; widening is a shift.

A `Codec` is the pair of inlined functions a kernel calls on every element it stores and loads;
for float32 and float64 both are the identity, so one kernel serves every dtype.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from ._numba_cache import njit as cached_njit

HALF_DTYPES = ("float16", "bfloat16")
#: Every dtype a codec exists for.
DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class Codec:
    """How a kernel stores to and loads from an array of one dtype; `work` is what it computes in."""

    store: Callable[[Any], Any]    # a work-dtype value -> the array's element
    load: Callable[[Any], Any]     # an array element -> a work-dtype value
    work: np.dtype


@functools.cache
def _intrinsics():
    """The bit casts LLVM has and Numba does not spell (numba is imported only here)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def f16_bits(typingctx, x):
        """float32 -> its float16 bits, rounded to nearest even (LLVM fptrunc)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
        return types.uint16(types.float32), codegen

    @intrinsic
    def f16_value(typingctx, b):
        """float16 bits -> the float32 of the same value (exact)."""
        def codegen(context, builder, signature, args):
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
        return types.float32(types.uint16), codegen

    @intrinsic
    def bf16_bits(typingctx, x):
        """float32 -> its bfloat16 bits, rounded to nearest even, NaN kept quiet. In 32-bit
        lanes throughout: Numba widens uint32 arithmetic to 64 bits, which LLVM then vectorised
        at half the lanes with widening and narrowing shuffles (bfloat16 stores 2x float16's)."""
        def codegen(context, builder, signature, args):
            i32 = ir.IntType(32)
            u = builder.bitcast(args[0], i32)
            high = builder.lshr(u, ir.Constant(i32, 16))
            odd = builder.and_(high, ir.Constant(i32, 1))
            rounded = builder.lshr(builder.add(builder.add(u, ir.Constant(i32, 0x7FFF)), odd),
                                   ir.Constant(i32, 16))
            quiet = builder.or_(high, ir.Constant(i32, 0x40))
            nan = builder.icmp_unsigned(">", builder.and_(u, ir.Constant(i32, 0x7FFFFFFF)),
                                        ir.Constant(i32, 0x7F800000))
            return builder.trunc(builder.select(nan, quiet, rounded), ir.IntType(16))
        return types.uint16(types.float32), codegen

    @intrinsic
    def bf16_value(typingctx, b):
        """bfloat16 bits -> the float32 of the same value (exact), in 32-bit lanes."""
        def codegen(context, builder, signature, args):
            i32 = ir.IntType(32)
            wide = builder.shl(builder.zext(args[0], i32), ir.Constant(i32, 16))
            return builder.bitcast(wide, ir.FloatType())
        return types.float32(types.uint16), codegen

    return f16_bits, f16_value, bf16_bits, bf16_value


def vector_bits(builder, value, dtype: str, finite: bool = False):
    """The stores above for a kernel written as LLVM IR: <n x float> -> <n x i16>, the bits of
    `dtype` ("float16": fptrunc; "bfloat16": round to nearest even, as `bf16_bits`, NaN kept
    quiet unless `finite` says no lane can be NaN, as in a table of sines)."""
    from llvmlite import ir

    lanes = value.type.count
    if dtype == "float16":
        return builder.bitcast(builder.fptrunc(value, ir.VectorType(ir.HalfType(), lanes)),
                               ir.VectorType(ir.IntType(16), lanes))
    i32 = ir.VectorType(ir.IntType(32), lanes)

    def splat(x):
        return ir.Constant(i32, [x] * lanes)

    u = builder.bitcast(value, i32)
    high = builder.lshr(u, splat(16))
    odd = builder.and_(high, splat(1))
    rounded = builder.lshr(builder.add(builder.add(u, splat(0x7FFF)), odd), splat(16))
    if not finite:
        rounded = builder.select(builder.fcmp_unordered("uno", value, value), builder.or_(high, splat(0x40)),
                                 rounded)
    return builder.trunc(rounded, ir.VectorType(ir.IntType(16), lanes))


@functools.cache
def codecs() -> dict[str, Codec]:
    """One Codec per dtype, compiled once per process."""
    f16_bits, f16_value, bf16_bits, bf16_value = _intrinsics()
    inline = cached_njit(inline="always")

    @inline
    def same(x):
        return x

    @inline
    def f16_store(x):
        return f16_bits(np.float32(x))

    @inline
    def f16_load(b):
        return f16_value(b)

    @inline
    def bf16_store(x):
        return bf16_bits(np.float32(x))

    @inline
    def bf16_load(b):
        return bf16_value(b)

    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    return {"float16": Codec(f16_store, f16_load, f32), "bfloat16": Codec(bf16_store, bf16_load, f32),
            "float32": Codec(same, same, f32), "float64": Codec(same, same, f64)}


@dataclass(frozen=True)
class Storage:
    """Where a kernel's output of one dtype lives (`kernel`: the NumPy dtype it writes) and how
    that memory is handed back (`result`: NumPy float16 or a torch bfloat16 view, no copy)."""

    dtype: str

    @property
    def kernel(self) -> np.dtype:
        return np.dtype(np.uint16 if self.dtype in HALF_DTYPES else self.dtype)

    def result(self) -> Callable[[np.ndarray], Any]:
        """Decided in setup, so the timed call pays one view at most."""
        if self.dtype == "float16":
            return lambda out: out.view(np.float16)
        if self.dtype == "bfloat16":
            import torch

            return lambda out: torch.from_numpy(out).view(torch.bfloat16)
        return lambda out: out

    def encode(self, x: Any) -> np.ndarray:
        """Inputs as the kernel reads them, at call time: a view of `x` itself when it already
        holds the dtype in contiguous memory (float16, float32, float64; a torch bfloat16
        tensor, the numba backend's bfloat16 input, as its bits), else a copy: float32
        values rounded to bfloat16 bits (to nearest even, as bf16_store)."""
        if self.dtype == "bfloat16" and not isinstance(x, np.ndarray):    # torch bfloat16
            import torch

            return x.contiguous().view(torch.int16).numpy().view(np.uint16)
        if self.dtype == "bfloat16":
            u = np.ascontiguousarray(x, np.float32).view(np.uint32)
            return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
                    >> np.uint32(16)).astype(np.uint16)
        return np.ascontiguousarray(np.asarray(x, dtype=self.dtype)).view(self.kernel)
