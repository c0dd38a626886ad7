"""Kinds of table: what every verb needs to know to judge one kind of positional encoding.

The 1-D `[length, d_model]` table is one kind (kinds/table.py); rotary caches, 2-D/3-D grids
and timestep embeddings are others to come. A kind is one module that builds one `Kind`:
its spec type, its float64 reference, its per-element tolerance, verify's cases, and the
workloads bench may time. `checks.check` and `verify` reach a kind only through `of(spec)`
and `named(name)`, so a new kind needs no change to them; each implementation says which
kind it builds (`register(kind=...)`, default "table").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Kind:
    """One kind of table and the pieces the verbs use to judge it."""

    name: str
    spec_type: type
    reference: Callable[[Any], np.ndarray]           # float64 truth for a spec
    tolerance: Callable[[Any], np.ndarray]           # allowed |error| per element, same shape
    cases: Callable[..., Sequence[Any]]              # verify's specs: cases(quick, n_random, seed)
    workloads: tuple[str, ...] = ("table",)          # what bench may time for this kind


KINDS: dict[str, Kind] = {}


def add(kind: Kind) -> Kind:
    """Register a kind (a name already taken must be the same kind)."""
    old = KINDS.get(kind.name)
    if old is not None and old != kind:
        raise ValueError(f"kind {kind.name!r} is already defined")
    KINDS[kind.name] = kind
    return kind


def named(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {name!r}") from None


def of(spec: Any) -> Kind:
    """The kind whose spec type `spec` is."""
    for kind in KINDS.values():
        if isinstance(spec, kind.spec_type):
            return kind
    raise TypeError(f"{type(spec).__name__} is the spec of no known kind "
                    f"(known: {', '.join(sorted(KINDS))})")


def reference(spec: Any) -> np.ndarray:
    """The float64 reference of any kind's spec (the public `harness.reference`)."""
    return of(spec).reference(spec)


def tolerance(spec: Any) -> np.ndarray:
    """The per-element tolerance of any kind's spec (the public `harness.tolerance`)."""
    return of(spec).tolerance(spec)


from harness.core.kinds import table  # noqa: E402,F401  (registers the built-in kinds)
