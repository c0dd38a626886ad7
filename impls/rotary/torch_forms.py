"""torch on the CPU: rotary apply in every form real kernels take (registers two).

`rotary-torch-apply-forms` takes what FlashAttention's, Liger's and vLLM's kernels take: q and k
heads first or sequence first, k with fewer heads than q, position ids `[seq]` or `[batch, seq]`;
`rotary-torch-apply-inplace` does the same in place, as those kernels do. Both form float64
cos/sin once per (position id, frequency), round them to the dtype, and broadcast them over the
heads (so GQA costs nothing: k's heads are whatever k has), leaving the dims past rotary_dim
alone. They give bench something to time in those forms on any machine.
"""

from __future__ import annotations


from harness.core.kinds.rotary import ApplyForms, RotarySpec
from harness.core.registry import register

from ._supports import EVERY_SPEC
from ._tables import pair_slices

#: Every form: both layouts, GQA, per-sequence positions (in place or not).
FORMS = ApplyForms(layouts=("bhsd", "bshd"), gqa=True, batch_positions=True)


class FormRotation:
    """One spec's rotation of q and k handed over in its form."""

    def __init__(self, spec: RotarySpec):
        import torch

        self.torch, self.spec = torch, spec
        self.dtype = getattr(torch, spec.dtype)
        self.first, self.second = pair_slices(spec)
        self.inv_freq = torch.from_numpy(spec.inv_freq())

    def sincos(self, positions):
        """cos and sin of every position id and frequency, rounded to the dtype once, shaped to
        broadcast over q and k: a heads axis inserted where the layout has one."""
        theta = positions.double()[..., None] * self.inv_freq
        scale = self.spec.attention_scaling
        cos, sin = (theta.cos() * scale).to(self.dtype), (theta.sin() * scale).to(self.dtype)
        heads_axis = -3 if self.spec.qk_layout == "bhsd" else -2   # [.., h, s, n] or [.., s, h, n]
        return cos.unsqueeze(heads_axis), sin.unsqueeze(heads_axis)

    def rotate(self, x, cos, sin, into):
        """x's pairs rotated by cos, sin into `into` (x itself, in place: a temporary holds the
        first half while the second is written); the dims past rot are never touched."""
        torch = self.torch
        x1, x2 = x[..., self.first], x[..., self.second]
        o1, o2 = into[..., self.first], into[..., self.second]
        with torch.no_grad():
            first = x1 * cos
            first.addcmul_(x2, sin, value=-1)
            second = x2 * cos
            second.addcmul_(x1, sin)
            o1.copy_(first)
            o2.copy_(second)
        return into


@register(name="rotary-torch-apply-forms", backend="torch", workload="apply", supports=EVERY_SPEC,
          forms=FORMS)
def build_rotary_torch_apply_forms(spec: RotarySpec):
    """Every kernel form (bhsd/bshd, GQA, [batch, seq] ids): float64 cos/sin per id, out of place."""
    rotation = FormRotation(spec)

    def apply(q, k, positions):
        cos, sin = rotation.sincos(positions)
        return (rotation.rotate(q, cos, sin, q.clone()), rotation.rotate(k, cos, sin, k.clone()))

    return apply


@register(name="rotary-torch-apply-inplace", backend="torch", workload="apply", supports=EVERY_SPEC,
          forms=ApplyForms(layouts=FORMS.layouts, gqa=True, batch_positions=True, in_place=True))
def build_rotary_torch_apply_inplace(spec: RotarySpec):
    """rotary-torch-apply-forms in place, as Liger's and FlashAttention's kernels rotate: q and k
    rotated where they lie (the harness hands every call fresh ones)."""
    rotation = FormRotation(spec)

    def apply(q, k, positions):
        cos, sin = rotation.sincos(positions)
        return rotation.rotate(q, cos, sin, q), rotation.rotate(k, cos, sin, k)

    return apply
