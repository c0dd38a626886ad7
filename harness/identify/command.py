"""The `identify` verb: read a file, identify its tables, print the answers as text or JSON.

A file with several arrays (an .npz archive, a state dict) has each one identified and
reported; entries that are no table (a 1-D buffer) are named with the reason, and do not
stop the scan. Exit codes: 0 when a Spec reproduces a table as it is (any entry of the
file); 1 when none does (a named permutation of a known table, a single row that cannot
determine the Spec, or no match with the nearest candidates listed); 2 for bad input
(cli.py prints the UsageError).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Sequence

from harness.core import catalog
from harness.core.registry import Implementation
from harness.core.kinds.table.spec import SPEC_FIELDS, Spec
from harness.identify import readers
from harness.identify.check import Candidate
from harness.identify.files import Stored, open_file
from harness.identify.load import LoadedTable, from_array
from harness.identify.search import Identification, identify
from harness.util import tables
from harness.util.exitcodes import UsageError

#: Registered implementations named so reproduce a real library's convention (impls/).


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the table: .npy, .npz, .csv, or a "
                        "checkpoint (.pt/.pth/.bin, .safetensors, .h5/.weights.h5)")
    parser.add_argument("--key", help="only this array of an archive or tensor of a checkpoint "
                                      "dict ('a.b' inside nested dicts; default: every one)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object keyed by the Spec's field names")
    parser.add_argument("--kind", choices=readers.KINDS, default="auto",
                        help="the kind of table (default: from the arrays' names and shapes: "
                             "cos/sin or inv_freq -> rotary, pos_embed -> grid, timesteps -> "
                             "timestep, else the 1-D table)")
    parser.add_argument("--timesteps", metavar="FILE_OR_LIST",
                        help="the timesteps a timestep embedding embeds: a file of one array or "
                             "numbers separated by commas")


#: With a plugin anywhere, the cli hands identify the implementations' identities only
#: (harness.core.catalog): the search runs where no plugin was imported, and the libraries a
#: Spec names are asked of a child. With none, the built-ins load here.
JUDGE_APART = catalog.PLUGINS_APART


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    stored = open_file(args.file, key=args.key)
    routed = readers.route(stored, args.kind, args.timesteps, scan)
    if routed.answers is not None:
        return readers.report(args.file, routed.answers, args.json)
    impls = _Asking(impls, tuple(getattr(args, "plugin", None) or ()))
    if len(stored) > 1:
        return _report_entries(args.file, routed.scanned or scan(stored), impls, args.json)
    found = identify(_table(stored[0]))
    libraries = _libraries(found, impls)
    print(json.dumps(as_json(found, libraries), indent=2) if args.json else
          as_text(found, libraries))
    return 0 if found.matched else 1


def _report_entries(file: str, results: list[tuple[Stored, Identification | str]],
                    impls: Sequence[Implementation], as_json_object: bool) -> int:
    """Every entry of a file; the JSON object is the first match's (or first table's)."""
    answers = [(s, r) for s, r in results if isinstance(r, Identification)]
    if not answers:
        problems = "; ".join(f"{s.name}: {r}" for s, r in results)
        raise UsageError(f"{file} holds no table ({problems})")
    if as_json_object:
        key, head = next((a for a in answers if a[1].matched), answers[0])
        entries = [{"key": s.name, **as_json(r, _libraries(r, impls))}
                   if isinstance(r, Identification) else {"key": s.name, "error": r}
                   for s, r in results]
        print(json.dumps({"key": key.name, **as_json(head, _libraries(head, impls)),
                          "entries": entries}, indent=2))
    else:
        lines = [f"{file} holds {len(results)} arrays; each is identified on its own."]
        for s, r in results:
            lines.append(f"\n== {s.name} ==")
            lines.append(as_text(r, _libraries(r, impls)) if isinstance(r, Identification)
                         else f"not a table: {r}")
        print("\n".join(lines))
    return 0 if any(r.matched for _, r in answers) else 1


def scan(stored: Sequence[Stored]) -> list[tuple[Stored, Identification | str]]:
    """Identify every entry; one that is no table (a UsageError: bad input) gets the reason
    instead. Any other exception, a plain ValueError included, is a harness bug and stops
    the scan (exit 3 with its traceback), never a reason printed as if the entry were bad."""
    out: list[tuple[Stored, Identification | str]] = []
    for entry in stored:
        try:
            out.append((entry, identify(_table(entry), nearest=False)))
        except UsageError as exc:
            out.append((entry, str(exc)))
    return out


def _table(entry: Stored) -> LoadedTable:
    return from_array(entry.read(), source=entry.source, dtype=entry.dtype)


def _libraries(found: Identification, impls: Sequence[Implementation]) -> list[Implementation]:
    """Named only for a Spec the table determines (not for one of many, nor a near miss)."""
    return libraries_for(found.best.spec, impls) if found.best and not found.undetermined else []


def libraries_for(spec: Spec, impls: Sequence[Implementation]) -> list[Implementation]:
    """The registered library conventions that produce `spec`'s table (any dtype they offer)."""
    specs = [spec.replace(dtype=d) for d in dict.fromkeys([spec.dtype, "float32", "float64"])]
    if isinstance(impls, _Asking):
        impls = impls.answering(specs)
    return [i for i in impls if i.reference and any(i.supports(s) is None for s in specs)]


class _Asking(list):
    """The implementations identify was handed: loaded here (they answer `supports` themselves)
    or, with a plugin anywhere, identities from the catalog, whose library conventions are asked
    in a child about the specs in question (harness.core.catalog)."""

    def __init__(self, impls: Sequence[Any], plugins: tuple[str, ...]) -> None:
        super().__init__(impls)
        self.plugins = plugins

    def answering(self, specs: list[Spec]) -> list[Any]:
        if not any(isinstance(i, catalog.Entry) for i in self):
            return list(self)
        if not any(i.reference for i in self):
            return []
        return catalog.entries(self.plugins, specs, availability=False)


def _spec_fields(c: Candidate) -> dict[str, Any]:
    """Spec fields plus the errors (None for an infinite ratio: JSON has no Infinity)."""
    ratio = c.err_ratio if math.isfinite(c.err_ratio) else None
    return {**c.spec.as_dict(), "max_abs_err": c.max_abs_err, "err_ratio": ratio}


def as_json(found: Identification, libraries: Sequence[Implementation]) -> dict[str, Any]:
    """Spec fields of the answer (or of the nearest candidate) plus max_abs_err and context."""
    head = found.best or (found.nearest[0] if found.nearest else None)
    out: dict[str, Any] = _spec_fields(head) if head else {f: None for f in SPEC_FIELDS}
    out.update(match=found.matched, source=found.source, amplitude=found.amplitude.value,
               amplitude_expression=found.amplitude.expression,
               alternatives=[_spec_fields(c) for c in found.alternatives],
               libraries=[i.name for i in libraries], notes=list(found.notes))
    if found.undetermined:
        out["undetermined"] = found.undetermined
    if found.permutation:
        out.update(permutation=found.permutation, columns=list(found.columns))
    if not found.best:
        out["nearest"] = [_spec_fields(c) for c in found.nearest]
    return out


def as_text(found: Identification, libraries: Sequence[Implementation]) -> str:
    lines = [f"table: {found.source} ({found.shape[0]} x {found.shape[1]}, {found.dtype})"]
    if found.best and found.undetermined:
        lines.append(f"undetermined: {found.undetermined}")
        lines.append("  consistent with: " + _describe(found.best))
    elif found.best and not found.permutation:
        lines.append("match: " + _describe(found.best))
        if found.alternatives:
            lines.append("the same table within tolerance, read another way:")
            lines += ["  " + _describe(c) for c in found.alternatives]
    elif found.best:
        lines.append(f"no Spec reproduces the table as it is, but it is a permutation of one: "
                     f"{found.permutation}")
        lines.append("  of: " + _describe(found.best))
        if found.columns:
            lines.append("  table column j holds column columns[j] of that table: "
                         f"{list(found.columns)}")
    elif found.nearest:
        lines.append("no match: no Spec reproduces this table within tolerance. "
                     "Nearest candidates:")
        rows = [[c.spec.short(), c.max_abs_err, c.err_ratio] for c in found.nearest]
        lines.append(tables.text(["candidate", "max_abs_err", "error/tolerance"], rows))
    else:
        lines.append("no match: no Spec reproduces this table within tolerance")
    if libraries:
        lines.append("libraries with this convention:")
        lines += [f"  {i.name}: {i.doc}" for i in libraries]
    elif found.best and not found.undetermined:
        lines.append("libraries with this convention: none of the registered lib-* conventions")
    lines += [f"note: {n}" for n in found.notes]
    return "\n".join(lines)


def _describe(c: Candidate) -> str:
    s = c.spec
    fields = ", ".join(f"{f}={getattr(s, f)!r}" for f in SPEC_FIELDS
                       if f not in ("length", "d_model"))
    return (f"Spec({s.length}, {s.d_model}, {fields})\n"
            f"  max_abs_err {c.max_abs_err:.3g} ({c.err_ratio:.2g} of the tolerance)")
