"""The named conventions: the Spec fields that make a library's table, by a short name.

Bench times each implementation in the first of these it supports, in this order (the
concat-only seeds need t2t's schedule); the report recommends within one of them.
"""

from __future__ import annotations

from typing import Any

CONVENTIONS: dict[str, dict[str, Any]] = {
    "paper": {},
    "concat": {"layout": "concat"},
    "t2t": {"layout": "concat", "freq_shift": 1},
    "fairseq": {"layout": "concat", "freq_shift": 1, "offset": 2},
    "shift1": {"freq_shift": 1},
    "diffusers-flip": {"layout": "concat", "freq_shift": 1, "cos_first": True},
    "cos-first": {"cos_first": True},
}
