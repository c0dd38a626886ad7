"""The rotary implementations' usual `supports`: what each backend's arrays hold (registers
nothing; the class is the kind's, `harness.RotarySupports`)."""

from __future__ import annotations

from harness.core.kinds.rotary.supports import RotarySupports

#: NumPy has no bfloat16 (and pure Python writes NumPy arrays).
NUMPY_DTYPES = ("float16", "float32", "float64")
#: Elements one pure-Python call may touch: ~0.1 s per call at ~1 us per element (counted at
#: bench's 4 heads, RotarySupports.work: verify's 2 heads touch half of it).
PYTHON_ELEMENTS = 1 << 16

EVERY_SPEC = RotarySupports()
NUMPY = RotarySupports(dtypes=NUMPY_DTYPES, why_dtypes="NumPy has no bfloat16")
#: Numba's kernels store half dtypes as uint16 bits (impls/_numba_half.py): every dtype.
NUMBA = RotarySupports()
#: A bfloat16-only design (rotary-numba-cache-away-recycled: its rounding is bfloat16's).
BFLOAT16 = RotarySupports(dtypes=("bfloat16",), why_dtypes="its rounding is bfloat16's own")
PYTHON = RotarySupports(dtypes=NUMPY_DTYPES, max_elements=PYTHON_ELEMENTS,
                        why_dtypes="its results are NumPy arrays, and NumPy has no bfloat16")
