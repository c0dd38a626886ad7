"""A fill by streaming (non-temporal) stores: a bare write no implementation may beat by its stores.

A cached store reads each output line in before writing it (the read for ownership); a
streaming store (MOVNTDQ) does not, so a buffer larger than the last-level cache moves half
the bytes. Once an implementation streams its output (impls/table/_tile.py), a roof made of
cached fills only would let it come in under "the fastest bare write of the same bytes": this
roof writes the same bytes by streaming stores, 32 bytes at a time, the threads taking
contiguous runs, each run fenced (`sfence`) as the kernels fence theirs. The few bytes before
the first 32-byte boundary and after the last are written by plain stores.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from harness.bench.roof_memory import BFLOAT16_ONE

#: Bytes per streaming store: one AVX2 register (<8 x i32>), the alignment such a store needs.
VECTOR = 32


def pattern(dtype: str) -> np.ndarray:
    """The 32 bytes of 1.0 repeated in `dtype` (bfloat16 as its uint16 bits)."""
    if dtype == "bfloat16":
        one = np.array([BFLOAT16_ONE], np.uint16)
    else:
        one = np.ones(1, np.dtype(dtype))
    return np.tile(one.view(np.uint8), VECTOR // one.nbytes)


def streaming_fill(spec: Any) -> Callable[[np.ndarray], None]:
    """fill by streaming stores (Numba, every thread)"""
    import numba

    kernel, bytes_ = _kernel(), pattern(spec.dtype)
    words = bytes_.view(np.uint32)

    def write(out: np.ndarray) -> None:
        flat = out.reshape(-1).view(np.uint8)
        kernel(flat, words, bytes_, -flat.ctypes.data % VECTOR, numba.get_num_threads())

    write(np.empty(VECTOR * 4, np.uint8))   # compiled here, in setup, never in a timed call
    return write


@functools.cache
def _kernel() -> Callable[..., None]:
    from llvmlite import ir
    from numba import njit, prange, types
    from numba.core import cgutils
    from numba.extending import intrinsic

    vector = ir.VectorType(ir.IntType(32), VECTOR // 4)

    @intrinsic
    def stream(typingctx, buf, offset, words):
        """buf[offset:offset + 32] = words, by one non-temporal store (offset 32-byte aligned)."""
        def codegen(context, builder, signature, args):
            b = context.make_array(signature.args[0])(context, builder, args[0])
            w = context.make_array(signature.args[2])(context, builder, args[2])
            value = builder.load(builder.bitcast(w.data, vector.as_pointer()), align=4)
            at = context.cast(builder, args[1], signature.args[1], types.intp)
            pointer = builder.gep(builder.bitcast(b.data, ir.IntType(8).as_pointer()), [at])
            stored = builder.store(value, builder.bitcast(pointer, vector.as_pointer()),
                                   align=VECTOR)
            stored.set_metadata("nontemporal",
                                builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return context.get_dummy_value()

        return types.void(buf, offset, words), codegen

    @intrinsic
    def fence(typingctx):
        """sfence: this thread's streaming stores are ordered before what follows."""
        def codegen(context, builder, signature, args):
            sfence = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
            builder.call(sfence, [])
            return context.get_dummy_value()

        return types.void(), codegen

    @njit(parallel=True)
    def fill(buf, words, bytes_, head, threads):
        n = buf.size
        head = min(head, n)
        vectors = (n - head) // VECTOR
        for i in range(head):
            buf[i] = bytes_[(i - head) % VECTOR]
        for i in range(head + vectors * VECTOR, n):
            buf[i] = bytes_[(i - head) % VECTOR]
        runs = max(1, min(threads, vectors))
        for r in prange(runs):
            start, stop = r * vectors // runs, (r + 1) * vectors // runs
            for v in range(start, stop):
                stream(buf, head + v * VECTOR, words)
            fence()

    return fill
