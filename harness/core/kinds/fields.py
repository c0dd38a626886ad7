"""What every kind's spec shares: the dtypes, the limits of float64 positions and angles, and
the rules a field's value must follow.

A spec declares its fields' rules (`integer(minimum=1)`, `number(above=0)`, `one_of(...)`,
`FLAG`) in one mapping and `check_fields` applies them in order, so each kind states what a
field may hold instead of re-writing the checks, and every refusal reads the same: a
ValueError naming the field, the allowed range and the value given.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from harness.util.exitcodes import UsageError

DTYPES = ("float16", "bfloat16", "float32", "float64")
#: Positions must be exact integers in float64, the reference precision.
MAX_POSITION = 2**53
#: Angles past this have no fractional part in float64: sin and cos of them are noise, and
#: past 1.8e308 the reference is NaN. The largest angle of a table must stay below it.
MAX_ANGLE = 2.0**53


def is_int(value: Any) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number that is not a bool (inf and nan included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    return is_real(value) and math.isfinite(value)


@dataclass(frozen=True)
class Rule:
    """What one field may hold (`text`, as the error says it), and how it is stored."""

    text: str
    test: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda value: value
    optional: bool = False          # None is allowed, and kept
    says_none: bool = True          # ... and the error says so

    def check(self, name: str, value: Any) -> Any:
        """The value to store, or a ValueError naming the field, the rule and the value."""
        if value is None and self.optional:
            return None
        if not self.test(value):
            either = "None or " if self.optional and self.says_none else ""
            raise UsageError(f"{name} must be {either}{self.text}, got {value!r}")
        return self.convert(value)

    def or_none(self, says_none: bool = True) -> "Rule":
        """The same rule with None allowed too (`says_none`: the error mentions it)."""
        return Rule(self.text, self.test, self.convert, optional=True, says_none=says_none)


def integer(minimum: int, even: bool = False, note: str = "") -> Rule:
    """An integer >= minimum (and even): `note` says why, in parentheses."""
    text = f"{'an even' if even else 'an'} integer >= {minimum}" + (f" ({note})" if note else "")
    return Rule(text, lambda v: is_int(v) and v >= minimum and not (even and v % 2))


def number(above: Optional[float] = None, at_least: Optional[float] = None,
           not_equal: Optional[float] = None, note: str = "", to_float: bool = True) -> Rule:
    """A finite real number within the bounds given, stored as a float unless `to_float` is off."""
    bounds = ([f"> {above:g}"] if above is not None else []) + \
        ([f">= {at_least:g}"] if at_least is not None else []) + \
        ([f"!= {not_equal:g}"] if not_equal is not None else [])
    text = " ".join(["a finite number", " and ".join(bounds)]).strip() + (f" ({note})" if note else "")

    def test(value: Any) -> bool:
        return (is_finite(value) and (above is None or value > above)
                and (at_least is None or value >= at_least) and (not_equal is None or value != not_equal))

    return Rule(text, test, float if to_float else (lambda value: value))


def one_of(options: tuple[Any, ...]) -> Rule:
    return Rule(f"one of {options}", lambda v: v in options)


FLAG = Rule("True or False", lambda v: isinstance(v, bool))
DTYPE = one_of(DTYPES)


def check_fields(spec: Any, rules: Mapping[str, Rule]) -> None:
    """Check each field of a frozen dataclass `spec` by its rule, in order, and store the value
    the rule keeps (a float for a number)."""
    for name, rule in rules.items():
        object.__setattr__(spec, name, rule.check(name, getattr(spec, name)))
