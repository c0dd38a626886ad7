"""One answer for a table of another kind (rotary, grid, timestep): the spec that rebuilds it,
checked against that kind's own float64 reference and tolerance, and how it prints.

Every reading a search proposes is judged the same way, by rebuilding the reference from the
spec and comparing element by element, so no search can call a table matched on its own say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from harness.core import kinds
from harness.core.contract import C_FREQ, C_VALUE, angle_eps

#: Candidates that fit are ranked by the search's order (simplest first); this many more are
#: kept as other readings of the same table, and this many near misses when none fits.
MAX_ALTERNATIVES = 3
N_NEAREST = 5
#: Extra relative error, in eps, of a scaled frequency (a blend, a division, a smoothing).
C_SCALED = 4.0


@dataclass(frozen=True)
class Candidate:
    """A spec, a note on how it was read, and how far its reference is from the table."""

    spec: Any
    max_abs_err: float
    err_ratio: float             # max |error| / tolerance: <= 1 is a match
    note: str = ""

    @property
    def within(self) -> bool:
        return self.err_ratio <= 1.0

    def fields(self) -> dict[str, Any]:
        ratio = self.err_ratio if math.isfinite(self.err_ratio) else None
        return {**kinds.spec_dict(self.spec), "max_abs_err": self.max_abs_err, "err_ratio": ratio}


@dataclass(frozen=True)
class Answer:
    """What identify found for one table of a kind: the best candidate, or the nearest."""

    kind: str
    source: str
    shape: tuple[int, ...]
    dtype: str
    best: Optional[Candidate]
    alternatives: tuple[Candidate, ...] = ()
    nearest: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    compared: str = "the table"     # what was compared ("inv_freq" for a frequency vector)

    @property
    def matched(self) -> bool:
        return self.best is not None


def check(spec: Any, actual: np.ndarray, note: str = "") -> Candidate:
    """The spec's reference against `actual` (same shape), under the kind's tolerance."""
    expected = kinds.reference(spec)
    if expected.shape != actual.shape:
        return Candidate(spec, math.inf, math.inf, note)
    err = np.abs(actual - expected)
    ratio = float(np.max(err / kinds.tolerance(spec))) if err.size else 0.0
    return Candidate(spec, float(err.max(initial=0.0)), ratio, note)


def check_inv_freq(spec: Any, actual: np.ndarray, note: str = "") -> Candidate:
    """A rotary spec's inverse frequencies against a stored inv_freq vector: a few eps of
    float32 per rounding of the exponent (|ln inv_freq| of them) and of a scaling, whatever the
    stored dtype (the angle contract: an inv_freq held in a half dtype turns every angle p x
    inv_freq into another one, InternLM#237)."""
    expected = spec.inv_freq()
    if expected.shape != actual.shape:
        return Candidate(spec, math.inf, math.inf, note)
    scaled = C_SCALED if spec.rope_type != "default" else 0.0
    tol = angle_eps("float32") * expected * (C_VALUE + C_FREQ * np.abs(np.log(expected)) + scaled)
    err = np.abs(actual - expected)
    return Candidate(spec, float(err.max()), float(np.max(err / tol)), note)


def decide(kind: str, source: str, shape: tuple[int, ...], dtype: str,
           readings: Iterable[tuple[Any, str]], judge: Callable[[Any, str], Candidate],
           notes: Sequence[str] = (), compared: str = "the table",
           fallback: Iterable[tuple[Any, str]] = ()) -> Answer:
    """Judge readings in order (simplest first): the first within tolerance is the answer, the
    next few that also fit are alternatives; with none, the nearest of those and of `fallback`
    (readings a cheap test ruled out, judged only then) are listed."""
    fits: list[Candidate] = []
    misses: list[Candidate] = []
    seen: set = set()
    for spec, note in readings:
        if spec in seen:
            continue
        seen.add(spec)
        found = judge(spec, note)
        (fits if found.within else misses).append(found)
        if len(fits) > MAX_ALTERNATIVES:
            break
    notes = tuple(notes)
    if fits:
        notes += tuple(n for n in (fits[0].note,) if n)
        return Answer(kind, source, shape, dtype, fits[0], tuple(fits[1:]), notes=notes,
                      compared=compared)
    misses += [judge(spec, note) for spec, note in fallback if spec not in seen]
    nearest = sorted(misses, key=lambda c: (c.err_ratio, c.max_abs_err))[:N_NEAREST]
    return Answer(kind, source, shape, dtype, None, nearest=tuple(nearest), notes=notes,
                  compared=compared)


def as_json(answer: Answer) -> dict[str, Any]:
    """`kind` and the spec's fields at the top (the nearest candidate's when none matched), the
    evidence beside them, and `spec` alone for `kinds.spec_from_dict`."""
    head = answer.best or (answer.nearest[0] if answer.nearest else None)
    out: dict[str, Any] = head.fields() if head else {"kind": answer.kind}
    out.update(match=answer.matched, source=answer.source, shape=list(answer.shape),
               dtype=answer.dtype, compared=answer.compared,
               spec=kinds.spec_dict(head.spec) if head else None,
               alternatives=[c.fields() for c in answer.alternatives], notes=list(answer.notes))
    if not answer.matched:
        out["nearest"] = [c.fields() for c in answer.nearest]
    return out


def as_text(answer: Answer) -> str:
    shape = " x ".join(map(str, answer.shape))
    lines = [f"{answer.kind}: {answer.source} ({shape}, {answer.dtype})"]
    if answer.best:
        lines.append("match: " + _describe(answer.best))
        if answer.alternatives:
            lines.append(f"{answer.compared} is also reproduced, read another way, by:")
            lines += ["  " + _describe(c) for c in answer.alternatives]
    else:
        lines.append(f"no match: no {answer.kind} spec reproduces {answer.compared} within "
                     "tolerance." + (" Nearest candidates:" if answer.nearest else ""))
        lines += ["  " + _describe(c) for c in answer.nearest]
    lines += [f"note: {n}" for n in answer.notes]
    return "\n".join(lines)


def _describe(c: Candidate) -> str:
    fields = ", ".join(f"{k}={v!r}" for k, v in c.spec.as_dict().items()
                       if not isinstance(v, (list, tuple)) or len(v) <= 16)
    return (f"{type(c.spec).__name__}({fields})\n"
            f"    max_abs_err {c.max_abs_err:.3g} ({c.err_ratio:.2g} of the tolerance)")
