"""identify names a table built in half precision (positions and angles held in float16 or
bfloat16) as such, instead of only 'no match'; an honest half-precision table still matches."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.kinds.table.reference import reference
from harness.core.kinds.table.spec import Spec
from harness.identify.check import Candidate
from harness.identify.half import half_built, half_note
from tests.test_identify import run, save


def test_a_float16_built_table_is_named_as_built_in_half_precision(tmp_path, capsys):
    spec = Spec(4096, 64, dtype="float16")
    rc, found = run(capsys, save(tmp_path, half_built(spec, "float16").astype(np.float16)))
    assert not found["match"]
    assert any("built in half precision" in n and "held in float16" in n for n in found["notes"])


def test_an_honest_float16_table_matches_without_the_note(tmp_path, capsys):
    spec = Spec(4096, 64, dtype="float16")
    rc, found = run(capsys, save(tmp_path, reference(spec).astype(np.float16)))
    assert rc == 0 and found["match"]
    assert not any("half precision" in n for n in found["notes"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_note_needs_the_half_build_itself(dtype):
    spec = Spec(1000, 32, dtype=dtype)
    near = [Candidate(spec, 1.0, 100.0)]
    assert "held in " + dtype in half_note(half_built(spec, dtype), dtype, near)
    assert half_note(reference(spec), dtype, near) is None               # another table
    assert half_note(half_built(spec, dtype), "float32", near) is None   # stored in float32
