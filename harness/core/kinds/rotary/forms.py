"""The forms of rotary apply that real kernels take, and what an implementation declares it takes.

A verify or bench case of the apply workload is a `RotarySpec` whose apply fields say how q, k
and the position ids are laid out (`qk_layout`, `kv_heads`, `position_ids`); the defaults are the
form every apply implementation takes: q and k `[batch, heads, seq, head_dim]` with as many k
heads as q heads, positions `[seq]`. An implementation declares the other forms it takes with an
`ApplyForms` passed to `register(forms=...)`, so a case it did not declare is a skip with the
reason, never a wrong answer, and a case it declared but gets wrong is a failed case.

Why a declaration and not a probe: a kernel that takes `[batch, seq, heads, head_dim]` reads a
heads-first array as garbage without error (FlashAttention's `apply_rotary`, Liger's and vLLM's
kernels each take one layout), and one that ignores k's head count rotates only part of k
(Liger-Kernel#342). Only the implementation knows what it takes; the harness then holds it to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from harness.util.exitcodes import UsageError

#: q and k memory layouts: heads first (transformers, Liger) or sequence first (FlashAttention, vLLM).
QK_LAYOUTS = ("bhsd", "bshd")
#: position ids one per token of the sequence (`[seq]`, shared by the batch) or per sequence (`[batch, seq]`).
POSITION_IDS = ("seq", "batch")


@dataclass(frozen=True)
class ApplyForms:
    """The forms of rotary apply an implementation takes; the defaults are the original form.

    - `layouts`: the q/k memory layouts it takes ("bhsd" `[batch, heads, seq, head_dim]`,
      "bshd" `[batch, seq, heads, head_dim]`); it gets each case in that layout and must return
      it in the same one, never converted by the harness.
    - `gqa`: k may have fewer heads than q (grouped-query attention, down to one k head).
    - `batch_positions`: position ids may be `[batch, seq]`, one row per sequence (packed
      sequences, left padding), as well as `[seq]`.
    - `in_place`: it rotates q and k in arrays it owns: its factory returns
      `harness.InPlace(reset, call)`, where `reset()` (untimed) puts a fresh copy of the given q
      and k into those arrays and `call()` rotates them in place and returns them `(q, k)`.
    """

    layouts: tuple[str, ...] = ("bhsd",)
    gqa: bool = False
    batch_positions: bool = False
    in_place: bool = False

    def __post_init__(self) -> None:
        layouts = self.layouts
        if isinstance(layouts, str) or not isinstance(layouts, (tuple, list)) or not layouts \
                or any(layout not in QK_LAYOUTS for layout in layouts):
            raise UsageError(f"layouts must be a non-empty tuple of {QK_LAYOUTS}, got {layouts!r}")
        object.__setattr__(self, "layouts", tuple(dict.fromkeys(layouts)))
        for name in ("gqa", "batch_positions", "in_place"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def why_not(self, spec: Any) -> Optional[str]:
        """None when an implementation declaring these forms takes the apply case `spec`, else
        why not (a skip, naming the declaration)."""
        if spec.qk_layout not in self.layouts:
            return (f"q/k layout {spec.qk_layout} not declared (ApplyForms(layouts={self.layouts}))")
        if spec.kv_heads is not None and not self.gqa:
            return "k with fewer heads than q not declared (ApplyForms(gqa=False))"
        if spec.position_ids == "batch" and not self.batch_positions:
            return "position ids [batch, seq] not declared (ApplyForms(batch_positions=False))"
        return None

    @classmethod
    def taking(cls, spec: Any) -> "ApplyForms":
        """The forms a case asks for: what `check_callable` declares for a user's function
        handed that case (out of place)."""
        return cls(layouts=(spec.qk_layout,), gqa=spec.kv_heads is not None,
                   batch_positions=spec.position_ids == "batch")

    @classmethod
    def every(cls, gqa: bool = True) -> "ApplyForms":
        """Every out-of-place form: what a pass over q and k that reads no layout or position
        declares (a bench roof); gqa=False for one that needs k with q's heads."""
        return cls(layouts=QK_LAYOUTS, gqa=gqa, batch_positions=True)

    def describe(self) -> str:
        """What `list` shows: the forms beyond the original one."""
        extra = [name for name in ("gqa", "batch_positions", "in_place") if getattr(self, name)]
        return " ".join(["/".join(self.layouts), *extra])


#: The form every apply implementation registered without `forms=` takes.
ORIGINAL = ApplyForms()


def is_apply_form(spec: Any) -> bool:
    """Whether a rotary spec asks for an apply form other than the original: a cache is the same
    for every form, so the cache workload leaves these cases to apply."""
    return spec.qk_layout != "bhsd" or spec.kv_heads is not None or spec.position_ids != "seq"


def describe_case(spec: Any) -> str:
    """How this case hands q, k and the positions over, for a failure's reason."""
    k_heads = "as many k heads as q" if spec.kv_heads is None else f"{spec.kv_heads} k head(s)"
    positions = "[batch, seq]" if spec.position_ids == "batch" else "[seq]"
    return f"q and k {spec.qk_layout}, {k_heads}, position ids {positions}"
