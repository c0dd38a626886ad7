"""What to tell the user besides the Spec: how the table was read, and what it cannot show.

Kept apart from the search so the wording lives in one place; each note is one line of
plain text, printed as `note: ...` and listed under `notes` in --json.
"""

from __future__ import annotations

import numpy as np

from harness.core.kinds.table.spec import Spec
from harness.identify.amplitude import Amplitude
from harness.identify.check import Context
from harness.identify.load import LoadedTable

AMPLITUDE_ORIGINS = {
    "d_model ** -0.5": "x-transformers' ScaledSinusoidalEmbedding starts at dim ** -0.5",
    "sqrt(d_model)": "the table already multiplied by sqrt(d_model), the embedding scale",
}


def describe_amplitude(amp: Amplitude) -> str:
    """0.125 (= d_model ** -0.5: ...), 0.37, or 0.3712 (measured, +- 1e-6)."""
    if amp.expression == "measured":
        return f"{amp.value:.9g} (measured, +- {amp.err:.2g})"
    if amp.expression in AMPLITUDE_ORIGINS:
        return f"{amp.value:.6g} (= {amp.expression}: {AMPLITUDE_ORIGINS[amp.expression]})"
    return f"{amp.value:g}"


def table_notes(table: LoadedTable, valid: np.ndarray, ctx: Context) -> tuple[str, ...]:
    notes = []
    if table.batch > 1:
        notes.append(f"dropped a leading batch axis of {table.batch} identical copies")
    if ctx.amplitude.scaled:
        notes.append(f"values carry an amplitude of {describe_amplitude(ctx.amplitude)}: the "
                     "table is amplitude x the Spec's table")
    zero_rows = np.flatnonzero(~valid)
    if len(zero_rows):
        shown = ", ".join(map(str, zero_rows[:8])) + (" ..." if len(zero_rows) > 8 else "")
        notes.append(f"rows {shown} are all zeros (a padding row, like fairseq's padding_idx) "
                     "and were left out of the match")
    if table.dtype and ctx.precision != table.dtype:
        notes.append(f"values stored as {table.dtype} carry only {ctx.precision} precision: "
                     f"matched at {ctx.precision} tolerance")
    return tuple(notes)


def match_notes(spec: Spec) -> tuple[str, ...]:
    notes = []
    if spec.d_model % 2 == 0:
        notes.append("even width: the odd-width policy (odd) cannot be seen and is reported as "
                     "the default")
    if spec.n_freq < 2:
        notes.append("a single frequency: base and freq_shift cannot be seen and are reported as "
                     "the defaults")
    if spec.base < 1:
        notes.append(f"base < 1: frequencies rise along the columns - the base "
                     f"{1 / spec.base:.6g} table with its frequency order reversed")
    if spec.cos_first:
        notes.append("cos before sin: the sin-first table with its sin and cos halves swapped "
                     "(diffusers flip_sin_to_cos=True)")
    return tuple(notes)
