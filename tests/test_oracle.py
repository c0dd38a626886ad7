"""The oracle (tests/oracle.py) against values worked by hand, and its independence.

Everything else is judged by the oracle, so the oracle is judged by numbers
written down here: column orders read off the published conventions, frequencies
that come out round (10000 ** (-1/4) = 0.1), and sin/cos of small angles.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest

from harness import Spec
from tests import oracle

#: Column orders by convention, as the libraries write them (d = 4, 5 and 3).
HAND_LABELS = [
    (dict(d_model=2), "s0 c0"),
    (dict(d_model=2, layout="concat"), "s0 c0"),
    (dict(d_model=4), "s0 c0 s1 c1"),                                     # paper, seeds
    (dict(d_model=4, layout="concat"), "s0 s1 c0 c1"),                    # t2t, fairseq
    (dict(d_model=4, cos_first=True), "c0 s0 c1 s1"),
    (dict(d_model=4, layout="concat", cos_first=True), "c0 c1 s0 s1"),    # diffusers flip, GLIDE
    (dict(d_model=5, odd="pad"), "s0 c0 s1 c1 0"),
    (dict(d_model=5, odd="pad", layout="concat"), "s0 s1 c0 c1 0"),       # t2t odd channels
    (dict(d_model=5, odd="pad", layout="concat", cos_first=True), "c0 c1 s0 s1 0"),
    (dict(d_model=5, odd="extend"), "s0 c0 s1 c1 s2"),                    # XLM, keras-hub
    (dict(d_model=5, odd="extend", cos_first=True), "c0 s0 c1 s1 c2"),
    (dict(d_model=5, odd="extend", layout="concat"), "s0 s1 s2 c0 c1"),   # Marian's sentinel
    (dict(d_model=5, odd="extend", layout="concat", cos_first=True), "c0 c1 c2 s0 s1"),
    (dict(d_model=3, odd="extend", layout="concat"), "s0 s1 c0"),
]

#: Inverse frequencies that come out round: base ** (-k / (H - shift)).
HAND_FREQS = [
    (dict(d_model=8), [1, 0.1, 0.01, 0.001]),                             # H = 4
    (dict(d_model=10, freq_shift=1), [1, 0.1, 0.01, 0.001, 0.0001]),      # H - 1 = 4
    (dict(d_model=4, freq_shift=1), [1, 1e-4]),                           # spans 1 .. 1/base
    (dict(d_model=5, odd="pad", base=100.0), [1, 0.1]),                   # H = 5 // 2 = 2
    (dict(d_model=5, odd="extend", base=1e5), [1, 0.01, 0.0001]),         # H = 5 / 2
    (dict(d_model=6, freq_shift=0.5, base=1e5), [1, 0.01, 0.0001]),       # H - 0.5 = 2.5
]

SIN1, COS1 = 0.8414709848078965, 0.5403023058681398
SIN_01, COS_01 = 0.009999833334166665, 0.9999500004166653   # 0.01 - 0.01**3 / 6, 1 - 0.01**2 / 2 + ...
SIN3, COS3 = 0.1411200080598672, -0.9899924966004454
SIN_3, COS_3 = 0.29552020666133955, 0.955336489125606

#: (spec, row, the row's values): angle = scale * (row + offset) * inv_freq.
HAND_ROWS = [
    (Spec(2, 4), 0, [0, 1, 0, 1]),
    (Spec(2, 4), 1, [SIN1, COS1, SIN_01, COS_01]),                        # angles 1, 0.01
    (Spec(2, 4, layout="concat", cos_first=True), 1, [COS1, COS_01, SIN1, SIN_01]),
    (Spec(1, 2, offset=2, scale=0.5), 0, [SIN1, COS1]),                   # 0.5 * 2 * 1
    (Spec(1, 5, odd="pad", base=100.0, offset=3), 0, [SIN3, COS3, SIN_3, COS_3, 0]),
    (Spec(2, 5, odd="extend", base=1e5, layout="concat", cos_first=True), 1,
     [COS1, COS_01, 0.999999995, SIN1, SIN_01]),                          # angles 1, 0.01, 1e-4
    (Spec(3, 4, freq_shift=1, offset=99), 2,                              # angles 101, 0.0101
     [math.sin(101), math.cos(101), 0.0101 - 0.0101**3 / 6 + 0.0101**5 / 120,
      1 - 0.0101**2 / 2 + 0.0101**4 / 24 - 0.0101**6 / 720]),
]


def _spec(fields: dict) -> Spec:
    return Spec(**{"length": 1, **fields})


@pytest.mark.parametrize("fields, expected", HAND_LABELS, ids=lambda v: str(v))
def test_oracle_places_columns_as_the_conventions_say(fields, expected):
    assert oracle.labels(_spec(fields)) == expected


@pytest.mark.parametrize("fields, expected", HAND_FREQS, ids=lambda v: str(v))
def test_oracle_frequencies_are_the_hand_worked_ones(fields, expected):
    spec = _spec(fields)
    got = [float(oracle.inverse_frequency(spec, k)) for k in range(len(expected))]
    assert got == pytest.approx(expected, rel=1e-15, abs=0)


@pytest.mark.parametrize("spec, row, expected", HAND_ROWS, ids=lambda v: str(v))
def test_oracle_values_are_the_hand_worked_ones(spec, row, expected):
    assert oracle.table(spec)[row].tolist() == pytest.approx(expected, rel=0, abs=2e-16)
    assert [float(oracle.element(spec, row, c)) for c in range(spec.d_model)] == \
        pytest.approx(expected, rel=0, abs=2e-16)


def test_oracle_column_frequencies_include_scale_and_zero_padding():
    spec = Spec(1, 5, odd="pad", base=100.0, scale=3.0, layout="concat")
    assert oracle.column_frequencies(spec).tolist() == pytest.approx([3, 0.3, 3, 0.3, 0], rel=1e-15)


def test_oracle_imports_nothing_of_the_harness():
    """No helper of the code under test can reach the oracle: it imports no harness module
    at all and takes a Spec as a plain record."""
    tree = ast.parse(Path(oracle.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= {"__future__", "mpmath", "numpy"}


def test_oracle_reads_only_the_specs_fields():
    """Derived quantities (n_freq, denominator, half_width, max_angle) are code under test."""
    tree = ast.parse(Path(oracle.__file__).read_text())
    read = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "spec"}
    assert read and read <= {f.name for f in dataclasses.fields(Spec)}
