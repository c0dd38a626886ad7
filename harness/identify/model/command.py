"""The `check-model` verb: every positional tensor of a model folder against its config.

Exit codes: 0 when every positional tensor matches what the config implies or is learned;
1 when one differs (a stale inv_freq base, a table in another convention, a grid never
initialised); 2 for bad input (cli.py prints the UsageError).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from typing import Any, Sequence

from harness.core.registry import Implementation
from harness.identify.files import Stored
from harness.identify.model.expect import computed_tables, describe, expected, implied_rotary, is_positional
from harness.identify.model.folder import ModelFolder, open_folder
from harness.identify.model.judge import DIFFERS, LEARNED, NOT_STORED, Row, judge
from harness.util import exitcodes, tables

#: A layer index in a tensor name: per-layer copies of one buffer share a row.
LAYER = re.compile(r"\.\d+\.")
#: Verdicts whose reason is short enough for the table; the others' follow it as notes.
INLINE = (DIFFERS, LEARNED)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", nargs="?", default=".",
                        help="the model folder: config.json with model.safetensors (or shards) "
                             "or pytorch_model.bin (default: the current folder)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace, impls: list[Implementation]) -> int:
    folder = open_folder(args.dir)
    rows = check(folder)
    print(json.dumps(as_json(folder, rows), indent=2) if args.json else as_text(folder, rows))
    return exitcodes.FINDING if any(r.verdict == DIFFERS for r in rows) else exitcodes.OK


def check(folder: ModelFolder) -> list[Row]:
    """A row per positional tensor (identical per-layer copies merged), then the specs the
    config implies that no tensor holds."""
    rotary = implied_rotary(folder.config)
    rows: list[Row] = []
    groups: dict[tuple[str, str], list[Stored]] = {}
    for entry in folder.tensors:
        if is_positional(entry.name):
            groups.setdefault(_group_key(entry), []).append(entry)
    for (pattern, _), entries in groups.items():
        row = judge(entries[0], expected(entries[0].name, folder.config, rotary))
        if len(entries) > 1:
            row = dataclasses.replace(row, tensor=pattern, count=len(entries))
        rows.append(row)
    if rotary and not any(r.tensor.endswith("inv_freq") for r in rows):
        rows += [Row("inv_freq", (), "-", describe(spec, label), NOT_STORED,
                     "a non-persistent buffer: transformers builds it from the config at load")
                 for label, spec in rotary]
    rows += [Row(f"{side} embed_positions", (), "-", describe(spec), NOT_STORED,
                 "a non-persistent buffer: transformers builds it at load")
             for side, spec in computed_tables(folder.config)]
    return rows


def _group_key(entry: Stored) -> tuple[str, str]:
    """Per-layer copies with the same values share a key ("layers.*.rotary_emb.inv_freq")."""
    pattern = LAYER.sub(".*.", entry.name)
    if pattern == entry.name:
        return pattern, entry.name
    raw = entry.read()
    data = raw.numpy().tobytes() if hasattr(raw, "numpy") else bytes(memoryview(raw).cast("B"))
    return pattern, str(hash(data))


def as_text(folder: ModelFolder, rows: Sequence[Row]) -> str:
    head = (f"{folder.path}: model_type {folder.config.get('model_type', '?')}, "
            f"{len(folder.tensors)} tensors in {len(folder.files)} file(s)")
    if not rows:
        return head + "\nno positional tensor, and the config implies none"
    body = [[_name(r), " x ".join(map(str, r.shape)) or "-", r.identified, r.implied,
             r.verdict + (f": {r.why}" if r.why and r.verdict in INLINE else "")] for r in rows]
    notes = [f"note: {_name(r)}: {r.why}" for r in rows if r.why and r.verdict not in INLINE]
    return "\n".join([head, tables.text(["tensor", "shape", "identified as", "config implies",
                                         "verdict"], body), *notes])


def _name(row: Row) -> str:
    return f"{row.tensor} ({row.count} tensors)" if row.count > 1 else row.tensor


def as_json(folder: ModelFolder, rows: Sequence[Row]) -> dict[str, Any]:
    return {"folder": str(folder.path), "model_type": folder.config.get("model_type"),
            "files": [f.name for f in folder.files],
            "ok": not any(r.verdict == DIFFERS for r in rows),
            "tensors": [{**dataclasses.asdict(r), "shape": list(r.shape)} for r in rows]}
