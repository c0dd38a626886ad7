"""One `BaseSupports` (dtypes and a size cap) under every kind's declarative supports, all
exported from `harness`, so a plugin of any kind imports nothing from impls/."""

from __future__ import annotations

import pytest

import harness
from harness import (BaseSupports, GridSpec, GridSupports, RotarySpec, RotarySupports, Spec, Supports,
                     TimestepSpec, TimestepSupports)

SPECS = {Supports: Spec(8, 4, dtype="float16"), RotarySupports: RotarySpec(8, 4, dtype="float16"),
         GridSupports: GridSpec((2, 2), 8, dtype="float16"),
         TimestepSupports: TimestepSpec((1.0, 2.0), 4, dtype="float16")}


@pytest.mark.parametrize("cls", list(SPECS), ids=lambda c: c.__name__)
def test_every_kind_refuses_a_dtype_and_a_size_the_same_way(cls):
    spec = SPECS[cls]
    assert issubclass(cls, BaseSupports) and cls.__name__ in harness.__all__
    assert cls(dtypes=("float16",))(spec) is None
    refused = cls(dtypes=("float32",), why_dtypes="no halves here")(spec)
    assert refused == "dtype float16 not supported (only float32): no halves here"
    assert cls(dtypes=("float16",), max_elements=1)(spec)
    assert cls(dtypes=("float16",), max_elements=10**9)(spec) is None
    assert "f16" in cls(dtypes=("float16",)).describe()


def test_the_kinds_still_refuse_their_own_conventions():
    assert "layout" in Supports(layouts=("concat",))(Spec(8, 4))
    assert "layout" in RotarySupports(layouts=("interleaved",))(RotarySpec(8, 4))
    assert "too big for pure Python" in RotarySupports(max_elements=10)(RotarySpec(8, 4))
