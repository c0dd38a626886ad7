"""`conventions` for the other kinds: each implementation on every named convention of its kind."""

from __future__ import annotations

import argparse

from harness import REGISTRY, reference
from harness.core.registry import Registry
from harness.verbs import conventions as convention_matrix
from harness.verbs.conventions import each_kind as family_conventions


def _sin_first_only():
    """A timestep embedding that ignores cos_first: builds the sin-first table always."""
    reg = Registry()

    @reg.register(name="sin-always", backend="numpy", workload="timestep")
    def build(spec):
        return lambda: reference(spec.replace(cos_first=False)).astype(spec.dtype)

    return reg.get("sin-always")


def test_an_implementation_that_ignores_a_field_builds_only_the_conventions_without_it():
    rows = family_conventions.run([_sin_first_only(), REGISTRY.get("timestep-numpy")], 30.0)
    mine = rows[rows["impl"] == "sin-always"].set_index(["convention", "dtype"])["status"]
    assert mine[("sin-first", "float64")] == "pass"
    assert mine[("adm", "float64")] == "fail"          # ADM puts cos first
    assert (rows.loc[rows["impl"] == "timestep-numpy", "status"] == "pass").all()


def test_distances_are_zero_on_the_diagonal_and_two_between_swapped_halves():
    from harness.core import kinds

    table = family_conventions.distances(kinds.named("rotary"))
    names = [row[0].split(" ", 1)[1] for row in table]
    diagonal = [float(row[i + 1]) for i, row in enumerate(table)]
    assert diagonal == [0.0] * len(names)
    assert float(table[names.index("neox")][names.index("gptj") + 1]) > 1.0


def test_the_verb_writes_a_section_per_kind(tmp_path):
    args = argparse.Namespace(only=["timestep-numpy", "rotary-numpy-cache"], quick=True,
                              out=str(tmp_path), timeout_s=30.0, in_process=True)
    assert convention_matrix.main(args, REGISTRY.all()) == 0
    text = (tmp_path / "conventions.md").read_text()
    assert "## rotary" in text and "## timestep" in text
    rows = (tmp_path / "family_conventions.csv").read_text()
    assert "rotary-numpy-cache" in rows and "timestep-numpy" in rows
