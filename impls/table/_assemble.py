"""Place sin/cos blocks into a table by the Spec's convention, for any array library.

The same four conventions (layout, cos_first, odd 'pad', odd 'extend') apply to
NumPy, torch and TensorFlow; only the names of stack/concat differ, so each
backend passes its own `interleave` and `concat`. `interleaved` (stack +
flatten) and `concatenated` (one concatenate) are the two algorithms behind the
`-stack` and `-cat` variants (`Library` binds them to one library's blocks);
`assemble` picks one by layout for the variants that cover both; `register_general` registers
a library's two variants from its module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

from harness import Spec, Supports, register

Interleave = Callable[[Any, Any], Any]   # [L, h], [L, h] -> [L, 2h], columns a0 b0 a1 b1 ...
Concat = Callable[[Sequence[Any]], Any]  # along the last axis
Blocks = Callable[..., tuple]            # (spec, *args) -> sin [L, n_freq], cos [L, n_freq], zeros [L, 1]

#: What the general variants cover: every convention of the Spec.
EVERY_CONVENTION = Supports(cos_first=True, odd=("error", "pad", "extend"), scale=True)
INTERLEAVED = replace(EVERY_CONVENTION, layouts=("interleaved",))
CONCAT = replace(EVERY_CONVENTION, layouts=("concat",))


def interleaved(spec: Spec, sin: Any, cos: Any, zero_col: Any,
                interleave: Interleave, concat: Concat) -> Any:
    """Pairs side by side (stack on a new last axis, then flatten), then the 'extend' column
    or the 'pad' zeros. `sin`, `cos`: [length, n_freq]; `zero_col`: [length, 1] zeros."""
    first, second = (cos, sin) if spec.cos_first else (sin, cos)
    h = spec.d_model // 2
    parts = [interleave(first[:, :h], second[:, :h])]
    if spec.n_freq > h:          # 'extend': one more column of the first function
        parts.append(first[:, h:])
    return _padded(spec, parts, zero_col, concat)


def concatenated(spec: Spec, sin: Any, cos: Any, zero_col: Any, concat: Concat) -> Any:
    """The first function's block, the second's, then the 'pad' zeros: one concatenate."""
    first, second = (cos, sin) if spec.cos_first else (sin, cos)
    return _padded(spec, [first, second[:, : spec.d_model // 2]], zero_col, concat)


def _padded(spec: Spec, parts: list, zero_col: Any, concat: Concat) -> Any:
    if spec.odd == "pad" and spec.d_model % 2:
        parts.append(zero_col)
    return parts[0] if len(parts) == 1 else concat(parts)


def assemble(spec: Spec, sin: Any, cos: Any, zero_col: Any,
             interleave: Interleave, concat: Concat) -> Any:
    """Either of the two, by the Spec's layout: for variants that cover every convention."""
    if spec.layout == "interleaved":
        return interleaved(spec, sin, cos, zero_col, interleave, concat)
    return concatenated(spec, sin, cos, zero_col, concat)


@dataclass(frozen=True)
class Library:
    """One array library's sin/cos blocks, stack and concatenate: its `-stack` and `-cat` tables."""

    blocks: Blocks
    interleave: Interleave
    concat: Concat

    def stack(self, spec: Spec, *args: Any) -> Any:
        """Interleaved layouts: pairs stacked on a new axis, then flattened."""
        return interleaved(spec, *self.blocks(spec, *args), self.interleave, self.concat)

    def cat(self, spec: Spec, *args: Any) -> Any:
        """Concat layouts: one concatenate of the blocks."""
        return concatenated(spec, *self.blocks(spec, *args), self.concat)

    def table(self, spec: Spec, *args: Any) -> Any:
        """Whichever of the two the Spec's layout asks for."""
        return (self.stack if spec.layout == "interleaved" else self.cat)(spec, *args)


def register_general(library: Library, prefix: str, backend: str, module: str, how: tuple[str, str],
                     dtypes: Optional[tuple[str, ...]] = None, cuda: bool = False) -> None:
    """Register `{prefix}-stack` (interleaved layouts) and `{prefix}-cat` (concat layouts), the
    library's blocks placed by the two algorithms above, as written in `module`; `how` says
    how each places them, for their docs; `cuda`: their twins `{prefix}-cuda-stack` and -cat."""
    def stack(spec: Spec, device: Optional[str] = None):
        args = () if device is None else (device,)
        return lambda: library.stack(spec, *args)

    def cat(spec: Spec, device: Optional[str] = None):
        args = () if device is None else (device,)
        return lambda: library.cat(spec, *args)

    for factory, name, supports, doc in ((stack, "stack", INTERLEAVED, f"Any interleaved convention: {how[0]}."),
                                         (cat, "cat", CONCAT, f"Any concatenated convention: {how[1]}.")):
        factory.__module__, factory.__doc__ = module, doc
        register(name=f"{prefix}-{name}", backend=backend, cuda=f"{prefix}-cuda-{name}" if cuda else None,
                 supports=supports if dtypes is None else replace(supports, dtypes=dtypes))(factory)
