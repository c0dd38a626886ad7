"""What every kind's spec shares: sizes in bytes, `replace`, and a JSON round trip.

A spec is a frozen dataclass; its kind says how many elements it describes (`elements`), and
this mixin derives the rest (and the memory guard every spec runs last), so the four kinds cannot drift apart in how they count bytes or
how `spec_from_dict` reads back what `as_dict` printed (tuples travel as JSON lists).
"""

from __future__ import annotations

from dataclasses import MISSING, fields, replace
from typing import Any, Mapping, TypeVar

from harness.util import memory
from harness.util.exitcodes import UsageError

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}

S = TypeVar("S", bound="SpecRecord")


class SpecRecord:
    """Mixin for a kind's frozen dataclass spec with a `dtype` field."""

    dtype: str

    @property
    def elements(self) -> int:
        """Elements of the spec's result (every part of it)."""
        raise NotImplementedError

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize

    @property
    def nbytes_reference(self) -> int:
        """Bytes of the float64 reference."""
        return self.elements * 8

    def check_memory(self, what: str) -> None:
        """Refuse a spec whose float64 reference this machine cannot hold now; the message names
        the spec's own dtype and size (`what`: 'a 1000 x 64 table'), then the reference's."""
        if self.nbytes_reference > memory.CHECK_ABOVE:
            memory.check_fits(self.nbytes_reference, what=(
                f"{what} in {self.dtype} ({memory.human_bytes(self.nbytes)}): its float64 "
                "reference, which every check computes,"))

    def replace(self: S, **changes: Any) -> S:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (tuples as lists): `from_dict` reads it back exactly."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in fields(self)}

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """The inverse of `as_dict`, also after JSON (lists back to tuples); an unknown field is a
        ValueError naming the fields there are."""
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise UsageError(f"{cls.__name__} has no field(s) {sorted(unknown)}; "
                             f"its fields are {sorted(names)}")
        missing = {f.name for f in fields(cls) if f.default is MISSING
                   and f.default_factory is MISSING} - set(data)
        if missing:
            raise UsageError(f"{cls.__name__} needs the field(s) {sorted(missing)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
