"""Every kind's spec declares its fields' rules (harness.core.kinds.fields) instead of copying
the number, choice and memory checks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.core.kinds import KINDS, fields

KINDS_DIR = Path(fields.__file__).parent


def test_the_built_in_kinds_are_all_checked():
    assert {"table", "rotary", "grid", "timestep"} <= set(BUILT_IN)


def test_a_rule_names_the_field_the_range_and_the_value_and_keeps_a_float():
    assert fields.number(above=0).check("scale", 2) == 2.0
    assert type(fields.number(to_float=False).check("freq_shift", 1)) is int
    with pytest.raises(ValueError, match=r"^scale must be a finite number > 0, got nan$"):
        fields.number(above=0).check("scale", float("nan"))
    with pytest.raises(ValueError, match=r"^dim must be an even integer >= 2 \(pairs\), got True$"):
        fields.integer(2, even=True, note="pairs").check("dim", True)
    with pytest.raises(ValueError, match=r"^size must be None or an integer >= 1, got 0$"):
        fields.integer(1).or_none().check("size", 0)
    assert fields.integer(1).or_none().check("size", None) is None
    with pytest.raises(ValueError, match=r"^dtype must be one of \('float16'"):
        fields.DTYPE.check("dtype", "int8")


BUILT_IN = sorted(k for k, kind in KINDS.items() if kind.spec_type.__module__.startswith("harness.core.kinds."))


@pytest.mark.parametrize("kind", BUILT_IN)
def test_each_spec_declares_its_rules_and_copies_no_check(kind):
    spec_type = KINDS[kind].spec_type
    module = __import__(spec_type.__module__, fromlist=["RULES"])
    assert set(module.RULES) <= set(spec_type.__dataclass_fields__)
    defined = {node.name for node in ast.walk(ast.parse(Path(module.__file__).read_text()))
               if isinstance(node, ast.FunctionDef)}
    assert not defined & {"_is_int", "_is_real", "_is_finite", "_positive", "_finite"}
    assert "memory.check_fits(self.nbytes_reference" not in Path(module.__file__).read_text()  # check_memory
