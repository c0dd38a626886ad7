"""Declarative `supports` for the rotary implementations (registers nothing).

Every rope_type comes through `spec.inv_freq()` and `spec.attention_scaling`, so what varies
between implementations is only the dtypes their backend has, the layouts they place, and, for
pure Python, how many elements one call may touch before verify would wait on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

LAYOUTS = ("half", "interleaved")
EVERY_DTYPE = ("float16", "bfloat16", "float32", "float64")
#: NumPy has no bfloat16 (and pure Python writes NumPy arrays).
NUMPY_DTYPES = ("float16", "float32", "float64")
#: Numba's CPU target has no float16 (nor bfloat16) arrays.
NUMBA_DTYPES = ("float32", "float64")
#: Elements one pure-Python call may touch: ~0.1 s per call at ~1 us per element.
PYTHON_ELEMENTS = 1 << 15
#: The batch x heads verify and bench give an apply, per q and k (apply inputs' default is 2 x 2).
PYTHON_ROWS_PER_POSITION = 8


@dataclass(frozen=True)
class RotarySupports:
    """Which rotary specs an implementation covers; `max_elements` bounds a call's work."""

    dtypes: tuple[str, ...] = EVERY_DTYPE
    layouts: tuple[str, ...] = LAYOUTS
    max_elements: Optional[int] = None
    why_dtypes: str = ""

    def __call__(self, spec: Any) -> Optional[str]:
        if spec.dtype not in self.dtypes:
            why = f": {self.why_dtypes}" if self.why_dtypes else ""
            return f"dtype {spec.dtype} not supported (only {'/'.join(self.dtypes)}){why}"
        if spec.layout not in self.layouts:
            return f"layout {spec.layout!r} not supported (only {'/'.join(self.layouts)})"
        if self.max_elements is not None:
            work = spec.length * spec.head_dim * PYTHON_ROWS_PER_POSITION
            if work > self.max_elements:
                return (f"too big for pure Python: {spec.length} positions x head_dim {spec.head_dim} "
                        f"x {PYTHON_ROWS_PER_POSITION} rows > {self.max_elements} elements per call")
        return None

    def describe(self) -> str:
        parts = ["/".join(self.layouts), "/".join(d.replace("float", "f") for d in self.dtypes),
                 "every rope_type", "partial", "offset"]
        if self.max_elements is not None:
            parts.append(f"<= {self.max_elements} elements")
        return " ".join(parts)


EVERY_SPEC = RotarySupports()
NUMPY = RotarySupports(dtypes=NUMPY_DTYPES, why_dtypes="NumPy has no bfloat16")
NUMBA = RotarySupports(dtypes=NUMBA_DTYPES, why_dtypes="Numba's CPU target has no half-precision arrays")
PYTHON = RotarySupports(dtypes=NUMPY_DTYPES, max_elements=PYTHON_ELEMENTS,
                        why_dtypes="its results are NumPy arrays, and NumPy has no bfloat16")
