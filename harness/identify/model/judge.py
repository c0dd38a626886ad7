"""One row per positional tensor: what identify reads in it, what the config implies, and
whether the two agree.

A sinusoidal tensor is judged by rebuilding the config's spec with its kind's float64
reference and comparing element by element under that kind's tolerance (at the tensor's own
precision), so "matches" means the same thing it means in `verify`. identify's searches say
what the tensor holds instead, which is what a mismatch needs: "base 10000, config says
500000" points at the stale value. A learned table gets its distance to the nearest named
convention, which tells a trained table (about 1) from a sinusoidal one that is slightly off.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from harness.core import kinds
from harness.core.kinds.table.conventions import CONVENTIONS
from harness.core.kinds.table.spec import Spec
from harness.identify.readers import grid as grid_search
from harness.identify.readers import rotary as rotary_search
from harness.identify.readers.answer import check, check_inv_freq
from harness.identify.readers.arrays import matrix, read
from harness.identify.files import Stored
from harness.identify.half import HALF, held
from harness.identify.load import from_array
from harness.identify.model.expect import EXTRA_ROWS, Expected, describe
from harness.identify.search import identify

MATCHES, DIFFERS, LEARNED, NOT_STORED, NOT_CHECKED = (
    "matches", "DIFFERS", "learned", "not stored", "not checked")
#: Rows of a learned table compared with each named convention (its start shows enough).
NEAREST_ROWS = 512


@dataclass(frozen=True)
class Row:
    """One positional tensor (or a spec the config implies that no tensor holds)."""

    tensor: str
    shape: tuple[int, ...]
    identified: str
    implied: str
    verdict: str
    why: str = ""
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    count: int = 1                  # identical tensors of several layers in one row


def judge(entry: Stored, expect: Expected) -> Row:
    """The row of one stored positional tensor."""
    raw = entry.read()
    shape = tuple(int(n) for n in getattr(raw, "shape", ()))
    try:
        if expect.kind == "rotary":
            return _rotary(entry, raw, shape, expect)
        if expect.kind == "grid":
            return _grid(entry, raw, shape, expect)
        return _table(entry, raw, shape, expect)
    except ValueError as exc:      # NaN, a vector where a table belongs: not what was implied
        verdict = NOT_CHECKED if expect.kind in ("learned", "unknown") else DIFFERS
        return Row(entry.name, shape, "unreadable as a table", expect.text, verdict, str(exc))


def _held_in_half(omega: np.ndarray, expected: np.ndarray, dtype: str, rel: float) -> str:
    """Why an inv_freq differs when it is the config's, rounded to its half dtype ("" if not)."""
    if dtype not in HALF or not np.array_equal(held(omega, dtype), held(expected, dtype)):
        return ""
    return (f"the config's inv_freq held in {dtype} (max relative difference {rel:.3g}): every "
            "angle p x inv_freq is off by p times that, a phase error growing with the position "
            "(a model cast with .to(torch.bfloat16) casts its buffers; InternLM#237): keep "
            "inv_freq in float32")


def _rotary(entry: Stored, raw: Any, shape: tuple[int, ...], expect: Expected) -> Row:
    values, dtype = read(entry, raw)
    omega = values.reshape(-1)
    found = rotary_search.from_inv_freq(omega, entry.source, dtype)
    identified = describe(found.best.spec) if found.best else "no rotary convention"
    results = []
    for label, spec in expect.spec:
        spec = dataclasses.replace(spec, dtype=dtype)
        expected = spec.inv_freq()
        if expected.shape != omega.shape:
            results.append((math.inf, label, spec, None, f"{len(omega)} frequencies, config "
                            f"implies {len(expected)} (rotary_dim / 2)"))
            continue
        rel = float(np.max(np.abs(omega / expected - 1.0)))
        got = check_inv_freq(spec, omega)
        results.append((got.err_ratio, label, spec, rel, "" if got.within else
                        _held_in_half(omega, expected, dtype, rel) or
                        f"max relative difference {rel:.3g}: transformers rebuilds inv_freq "
                        "from the config and ignores this one; if the model was trained "
                        "with it, the config is what is wrong"))
    ratio, label, spec, rel, why = min(results, key=lambda r: r[0])
    verdict = MATCHES if ratio <= 1.0 else DIFFERS
    return Row(entry.name, shape, identified, describe(spec, label), verdict, why,
               max_rel_err=rel)


def _grid(entry: Stored, raw: Any, shape: tuple[int, ...], expect: Expected) -> Row:
    values, dtype = read(entry, raw)
    table = matrix(values, entry.source, "a grid table")
    spec = dataclasses.replace(expect.spec, dtype=dtype)
    try:
        found = grid_search.from_table(table, entry.source, dtype)
        identified = describe(found.best.spec) if found.best else "no grid convention"
    except ValueError:
        identified = _zeros(table) or "no grid"
    want = (spec.rows, spec.d_model)
    if table.shape != want:
        return Row(entry.name, shape, identified, expect.text, DIFFERS,
                   f"{table.shape[0]} x {table.shape[1]}, config implies {want[0]} x {want[1]}")
    return _verdict(entry.name, shape, identified, expect.text, check(spec, table))


def _table(entry: Stored, raw: Any, shape: tuple[int, ...], expect: Expected) -> Row:
    table = from_array(raw, source=entry.source, dtype=entry.dtype)
    values = np.asarray(table.values, dtype=np.float64)
    dtype = table.dtype or "float64"
    try:
        found = identify(table, nearest=False)
        identified = (describe(found.best.spec) if found.matched else
                      "learned, not sinusoidal" + _nearest(values))
        if found.matched and found.amplitude.scaled:
            identified = f"{found.amplitude.expression} x {identified}"
    except ValueError:
        identified = _zeros(values) or "no table"
    if expect.kind != "table":            # check-model's own kinds: a sinusoidal table or learned
        return _learned(entry.name, shape, identified, values, expect)
    spec = dataclasses.replace(expect.spec, dtype=dtype)
    if values.shape != (spec.length, spec.d_model):
        return Row(entry.name, shape, identified, expect.text, DIFFERS,
                   f"{values.shape[0]} x {values.shape[1]}, config implies {spec.length} x "
                   f"{spec.d_model}")
    return _verdict(entry.name, shape, identified, expect.text, check(spec, values))


def _verdict(name: str, shape: tuple[int, ...], identified: str, implied: str, got: Any) -> Row:
    if got.within:
        return Row(name, shape, identified, implied, MATCHES, max_abs_err=got.max_abs_err)
    return Row(name, shape, identified, implied, DIFFERS,
               f"max |error| {got.max_abs_err:.3g} ({got.err_ratio:.3g} x the tolerance)",
               max_abs_err=got.max_abs_err)


def _learned(name: str, shape: tuple[int, ...], identified: str, values: np.ndarray,
             expect: Expected) -> Row:
    rows = values.shape[0]
    if expect.kind == "unknown" or expect.rows is None:
        return Row(name, shape, identified, expect.text, LEARNED if expect.kind == "learned"
                   else NOT_CHECKED)
    extra = rows - expect.rows
    if extra == 0:
        return Row(name, shape, identified, expect.text, LEARNED, "as expected")
    if extra in EXTRA_ROWS:
        return Row(name, shape, identified, expect.text, LEARNED, EXTRA_ROWS[extra])
    return Row(name, shape, identified, expect.text, DIFFERS,
               f"{rows} rows, config implies {expect.rows}: transformers will not load it")


def _zeros(values: np.ndarray) -> str:
    return "all zeros (never initialised?)" if not np.any(values) else ""


def _nearest(values: np.ndarray) -> str:
    """' (nearest: NAME, max |error| E)' over the named 1-D conventions, on the first rows."""
    rows, width = min(len(values), NEAREST_ROWS), values.shape[1]
    if width < 2:
        return ""
    head = values[:rows]
    odd = "pad" if width % 2 else "error"
    errors = {name: float(np.max(np.abs(head - kinds.reference(
        Spec(rows, width, dtype="float64", odd=odd, **fields))))) for name, fields in CONVENTIONS.items()}
    name = min(errors, key=errors.get)
    return f" (nearest convention {name!r}: max |error| {errors[name]:.3g})"
