"""What the library implementations share: dtypes, positions, and the limits a library imposes.

A limit is a `spec -> None | reason` function whose docstring is its short label in `list`;
`impls.library_conventions.LibrarySupports` runs the limits first and prefixes every reason with
the library's name, so a refusal says whose restriction it is.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from harness import RotarySupports

from ..table.library_conventions import LibrarySupports

#: The dtypes of a library whose rotary angles are float32: its halves and float32 (not float64).
HALVES_AND_F32 = ("float16", "bfloat16", "float32")

__all__ = ["LibrarySupports", "even_width", "no_offset", "positions", "small_rows", "torch_dtype",
           "torch_positions", "two_pairs"]


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def positions(spec: Any) -> np.ndarray:
    """int64 positions offset .. offset + length - 1 of a table or rotary spec."""
    return np.arange(spec.offset, spec.offset + spec.length, dtype=np.int64)


def torch_positions(spec: Any):
    import torch

    return torch.arange(spec.offset, spec.offset + spec.length, dtype=torch.int64)


def no_offset(spec: Any) -> Optional[str]:
    """offset 0"""
    return "its table always starts at position 0 (offset 0 only)" if spec.offset else None


def even_width(spec: Any) -> Optional[str]:
    """even d"""
    return f"refuses an odd width, got d_model={spec.d_model}" if spec.d_model % 2 else None


def two_pairs(spec: Any) -> Optional[str]:
    """d>=4"""
    if spec.d_model // 2 < 2:
        return f"divides by channels // 2 - 1: d_model must be >= 4, got {spec.d_model}"
    return None


def small_rows(limit: int):
    """A limit on (offset + length) x d_model for a library that builds every row in Python."""
    def check(spec: Any) -> Optional[str]:
        cells = (spec.offset + spec.length) * spec.d_model
        if cells > limit:
            return (f"builds (offset + length) x d_model = {cells} cells in a Python loop; "
                    f"more than {limit} is not worth waiting for")
        return None

    check.__doc__ = f"(offset+length)*d<={limit}"
    return check


# the library casts positions to float32, exact only up to 2^24 (keras-hub, x-transformers);
# the docstring is what `list` shows for this limit
def float32_positions(spec: Any) -> Optional[str]:
    """positions<=2^24"""
    if spec.max_position > 1 << 24:
        return f"casts positions to float32, inexact past 2^24, got {spec.max_position}"
    return None


def float32_angles(layout: str, why: str) -> RotarySupports:
    """A rotary library that forms its angles in float32 (`why`: how it says so), in one layout."""
    return RotarySupports(dtypes=HALVES_AND_F32, layouts=(layout,), why_dtypes=why)


