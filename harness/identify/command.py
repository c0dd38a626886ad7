"""The `identify` verb: read a file, identify the table, print the answer as text or JSON.

Exit codes: 0 when a Spec reproduces the table as it is; 1 when none does
(a named permutation of a known table, or no match with the nearest
candidates listed); 2 for bad input (cli.py prints the ValueError).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Sequence

from harness import tables
from harness.identify.load import load
from harness.identify.search import Candidate, Identification, identify
from harness.registry import Implementation
from harness.spec import SPEC_FIELDS, Spec

#: Registered implementations named so reproduce a real library's convention (impls/).
LIBRARY_PREFIX = "lib-"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the table: .npy, .npz, .pt or .csv")
    parser.add_argument("--key", help="the array of an .npz archive or the tensor of a .pt dict "
                                      "(default: the first)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object keyed by the Spec's field names")


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    found = identify(load(args.file, key=args.key))
    libraries = libraries_for(found.best.spec, impls) if found.best else []
    if args.json:
        print(json.dumps(as_json(found, libraries), indent=2))
    else:
        print(as_text(found, libraries))
    return 0 if found.matched else 1


def libraries_for(spec: Spec, impls: Sequence[Implementation]) -> list[Implementation]:
    """The registered library conventions that produce `spec`'s table (any dtype they offer)."""
    out = []
    for impl in impls:
        if not impl.name.startswith(LIBRARY_PREFIX):
            continue
        dtypes = [spec.dtype, "float32", "float64"]
        if any(impl.supports(spec.replace(dtype=d)) is None for d in dtypes):
            out.append(impl)
    return out


def _spec_fields(c: Candidate) -> dict[str, Any]:
    """Spec fields plus the errors (None for an infinite ratio: JSON has no Infinity)."""
    ratio = c.err_ratio if math.isfinite(c.err_ratio) else None
    return {**c.spec.as_dict(), "max_abs_err": c.max_abs_err, "err_ratio": ratio}


def as_json(found: Identification, libraries: Sequence[Implementation]) -> dict[str, Any]:
    """Spec fields of the answer (or of the nearest candidate) plus max_abs_err and context."""
    head = found.best or (found.nearest[0] if found.nearest else None)
    out: dict[str, Any] = _spec_fields(head) if head else {f: None for f in SPEC_FIELDS}
    out.update(match=found.matched, source=found.source,
               libraries=[i.name for i in libraries], notes=list(found.notes))
    if found.permutation:
        out.update(permutation=found.permutation, columns=list(found.columns))
    if not found.best:
        out["nearest"] = [_spec_fields(c) for c in found.nearest]
    return out


def as_text(found: Identification, libraries: Sequence[Implementation]) -> str:
    lines = [f"table: {found.source} ({found.shape[0]} x {found.shape[1]}, {found.dtype})"]
    if found.best and not found.permutation:
        lines.append("match: " + _describe(found.best))
    elif found.best:
        lines.append(f"no Spec reproduces the table as it is, but it is a permutation of one: "
                     f"{found.permutation}")
        lines.append("  of: " + _describe(found.best))
        if found.columns:
            lines.append("  table column j holds column columns[j] of that table: "
                         f"{list(found.columns)}")
    else:
        lines.append("no match: no Spec reproduces this table within tolerance. "
                     "Nearest candidates:")
        rows = [[c.spec.short(), c.max_abs_err, c.err_ratio] for c in found.nearest]
        lines.append(tables.text(["candidate", "max_abs_err", "error/tolerance"], rows))
    if libraries:
        lines.append("libraries with this convention:")
        lines += [f"  {i.name}: {i.doc}" for i in libraries]
    elif found.best:
        lines.append("libraries with this convention: none of the registered lib-* conventions")
    lines += [f"note: {n}" for n in found.notes]
    return "\n".join(lines)


def _describe(c: Candidate) -> str:
    s = c.spec
    fields = ", ".join(f"{f}={getattr(s, f)!r}" for f in SPEC_FIELDS
                       if f not in ("length", "d_model"))
    return (f"Spec({s.length}, {s.d_model}, {fields})\n"
            f"  max_abs_err {c.max_abs_err:.3g} ({c.err_ratio:.2g} of the tolerance)")
