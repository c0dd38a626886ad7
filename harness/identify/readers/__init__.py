"""identify for the kinds besides the 1-D table: rotary caches and inv_freq vectors, 2-D/3-D
sincos grids, diffusion timestep embeddings.

dispatch.py decides the kind from the arrays' names and shapes (or --kind, any registered kind)
and tries each kind's reader in turn; arrays.py reads an entry's values; rotary.py with
rope_laws.py, grid.py and timestep.py propose readings; answer.py judges each against its
kind's own reference and tolerance and prints the answer: `--json` gives `kind` and the spec's
fields (what `harness.core.kinds.spec_from_dict` reads back, also alone under `spec`) with the
evidence (max_abs_err, err_ratio, match, notes, alternatives or nearest).
"""

from __future__ import annotations

import json
from typing import Sequence

from harness.identify.readers.answer import Answer, as_json, as_text
from harness.identify.readers.dispatch import KINDS, Route, identify_family, read_kinds, route
from harness.util.exitcodes import UsageError


def report(file: str, answers: Sequence[tuple[str, Answer]], as_json_object: bool) -> int:
    """Print every answer (the JSON object is the first match's, with every entry under
    `entries` when there are several); exit code 0 when any matched, else 1."""
    if not answers:
        raise UsageError(f"{file} holds no table of the kind asked for")
    if as_json_object:
        key, head = next(((k, a) for k, a in answers if a.matched), answers[0])
        out = {"key": key, **as_json(head)}
        if len(answers) > 1:
            out["entries"] = [{"key": k, **as_json(a)} for k, a in answers]
        print(json.dumps(out, indent=2))
    else:
        lines = [] if len(answers) == 1 else [f"{file} holds {len(answers)} tables; each is "
                                              "identified on its own."]
        for key, answer in answers:
            if len(answers) > 1:
                lines.append(f"\n== {key} ==")
            lines.append(as_text(answer))
        print("\n".join(lines))
    return 0 if any(a.matched for _, a in answers) else 1


__all__ = ["Answer", "KINDS", "Route", "identify_family", "read_kinds", "report", "route"]
