"""FlashAttention's Triton rotary, through its public `apply_rotary` (registers two).

flash-attn ships on PyPI as source only, and its build compiles CUDA extensions for an hour;
its Triton rotary (`flash_attn/ops/triton/rotary.py`) needs only torch and triton. So the
module is loaded by path from wherever flash-attn's files are: an installed flash-attn, or the
module and PKG-INFO that scripts/kernel_sources.py extracts from the pinned sdist (which is how
`list` knows its version); importing the `flash_attn` package itself would load its CUDA
extension. `apply_rotary(x, cos, sin)` rotates one `[batch, seq, heads, head_dim]` tensor with
any strides (so heads-first memory is taken as a view), by cos/sin rows `[seq, rotary_dim / 2]`
indexed by the sequence position (plus a per-sequence offset): position ids `[seq]` become
those rows, while ids `[batch, seq]` cannot be expressed. q and k are two calls, so any k head
count works. It computes in float32 whatever the dtype (float64 is refused). It enters
`torch.cuda.device(x.device.index)`, which a CPU tensor cannot, so it runs on a CUDA device only
(not in Triton's interpreter: tests/test_triton_libraries.py checks its kernel there with that
one context made a no-op).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Optional

from harness import ApplyForms, RotarySpec, RotarySupports
from harness.core.registry import register

from ._common import LibrarySupports
from ._kernel_inputs import CosSin

#: Where the module may be, relative to flash-attn's distribution: extracted, or installed.
PLACES = ("flash-attn-src/flash_attn/ops/triton/rotary.py", "flash_attn/ops/triton/rotary.py")
LAYOUTS = ("bhsd", "bshd")


def module_path() -> Optional[Path]:
    """The rotary module's file, or None when flash-attn's files are not here."""
    try:
        dist = importlib.metadata.distribution("flash-attn")
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [Path(str(dist.locate_file(place))) for place in PLACES]
    return next((p for p in found if p.is_file()), None)


def missing() -> Optional[str]:
    if module_path() is None:
        return ("flash-attn's flash_attn/ops/triton/rotary.py is not here (`nox -s triton` or "
                "`python scripts/kernel_sources.py DIR` extracts it from the pinned sdist into DIR, "
                "which goes on the path)")
    return None


@functools.cache
def apply_rotary():
    """flash-attn's `apply_rotary`, its module loaded by path under a private name."""
    spec = importlib.util.spec_from_file_location("_flash_attn_triton_rotary", module_path())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.apply_rotary


def head_dim_256(spec: RotarySpec) -> Optional[str]:
    """head_dim<=256"""
    if spec.head_dim > 256:
        return f"asserts headdim <= 256, got head_dim={spec.head_dim}"
    return None


FLASH = LibrarySupports("FlashAttention", RotarySupports(dtypes=("float16", "bfloat16", "float32"),
                        why_dtypes="it computes in float32"), (head_dim_256,))


def build(spec: RotarySpec, inplace: bool, device: str = "cuda"):
    """The factory of both registrations (`device`: where its cos/sin cache goes)."""
    rotary = apply_rotary()
    cache = CosSin(spec, device, duplicated=False)
    interleaved = spec.layout == "interleaved"
    seq_first = spec.qk_layout == "bshd"

    def one(x, cos, sin):   # [batch, seq, heads, head_dim] as apply_rotary takes it, as given
        y = rotary(x if seq_first else x.transpose(1, 2), cos, sin, interleaved=interleaved,
                   inplace=inplace)
        return y if seq_first else y.transpose(1, 2)

    def apply(q, k, positions):
        cos, sin = cache.at(positions)
        return one(q, cos, sin), one(k, cos, sin)

    return apply


@register(name="flash-attn-triton-rope-apply", backend="triton", device="cuda", workload="apply",
          library="flash-attn", check=missing, supports=FLASH,
          forms=ApplyForms(layouts=LAYOUTS, gqa=True))
def build_flash_attn_apply(spec: RotarySpec):
    """apply_rotary(x, cos, sin) on q, then on k, into new tensors (cos/sin [seq, rot/2])."""
    return build(spec, inplace=False)


@register(name="flash-attn-triton-rope-apply-inplace", backend="triton", device="cuda",
          workload="apply", library="flash-attn", check=missing, supports=FLASH,
          forms=ApplyForms(layouts=LAYOUTS, gqa=True, in_place=True))
def build_flash_attn_apply_inplace(spec: RotarySpec):
    """apply_rotary(..., inplace=True) on q, then on k."""
    return build(spec, inplace=True)
