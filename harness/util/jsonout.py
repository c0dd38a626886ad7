"""JSON for `--json` on the verbs: strict JSON a CI job can parse (NaN and infinities become null).

Python's json module writes NaN as the bare word `NaN`, which jq, JavaScript and
most strict parsers reject; a verdict with no error measured is `null` here.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """`value` with NumPy scalars made Python ones and non-finite floats made None, recursively."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(value: Any) -> str:
    """Indented strict JSON of `value` (allow_nan=False: a stray NaN is a bug, not output)."""
    return json.dumps(plain(value), indent=2, allow_nan=False)
