"""The angle contract every kind's tolerance is built from, and the grade it gives.

A fixed atol either hides bugs at small positions or flags honest rounding at large ones, so the
bound scales with each element's angle. An honest implementation forms each angle in float32 or
better and rounds once to the output dtype, so for an element of angle theta whose angle carries
a relative error of `gain` eps:

    tol = C_VALUE eps(value) + min(eps(angle) |theta| gain, MAX_ANGLE_ERROR)

- `C_VALUE` ulps of 1.0 cover rounding the result and the libm's sin/cos: ulps of the *output*
  dtype, or of float32 where the `float32` contract's values are computed in a finer one (a
  float64 table from float32 angles carries float32's rounding).
- `gain` is each kind's: `C_ANGLE` for rounding position, frequency and product, plus
  `C_FREQ |ln inv_freq|` for the frequency's exponent, which exp amplifies by |ln inv_freq|.
- `MAX_ANGLE_ERROR`: an angle off by more than an eighth of a radian is another angle, not a
  rounding. Past ~1e6 radians float32 angles meet no contract, and the bound must not grow to
  the range of a sinusoid: a tolerance that wide would check nothing.

The angle's eps is that of float32 for the `float32` contract, whatever the output dtype, and of
float64 for the `exact` one; never eps(output dtype): in bfloat16 eps x theta passes any value
past a few hundred positions, and that is the bug libraries keep shipping (positions, angles or
inv_freq held in a half dtype). `grade` turns a result's errors into the contract it met.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from harness.util.exitcodes import UsageError

C_VALUE = 4.0
C_ANGLE = 4.0
C_FREQ = 2.0

EPS = {
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": 2.0**-7,
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}

#: The most angle error (radians, times the amplitude) any contract allows.
MAX_ANGLE_ERROR = 0.125

#: The contracts an implementation can meet, best first, then failing both.
GRADES = ("exact", "float32", "fail")
#: The precision an honest angle is formed in, per contract.
ANGLE_DTYPE = {"exact": "float64", "float32": "float32"}


def eps(dtype: str) -> float:
    return EPS[dtype]


def angle_eps(grade: str) -> float:
    """eps of the precision the angles of a contract are formed in (float32 for `float32`,
    float64 for `exact`), whatever the output dtype."""
    try:
        return EPS[ANGLE_DTYPE[grade]]
    except KeyError:
        raise UsageError(f"grade must be one of {tuple(ANGLE_DTYPE)}, got {grade!r}") from None


def angle_bound(dtype: str, theta: np.ndarray, gain: np.ndarray, grade: str = "float32") -> np.ndarray:
    """The `grade` contract for values of angle `theta` whose relative angle error is `gain` eps:
    C_VALUE ulps of the output dtype (float32's at least, for the `float32` grade) plus the
    angle's error as if formed in that grade's dtype, at most MAX_ANGLE_ERROR."""
    angle_error = np.minimum(angle_eps(grade) * np.abs(theta) * gain, MAX_ANGLE_ERROR)
    return value_bound(dtype, grade) + angle_error


def value_bound(dtype: str, grade: str = "float32") -> float:
    """C_VALUE ulps of the output dtype, of float32 at least for the `float32` grade: what a
    value with no angle (a zero pad column, a cls row) or an angle of 0 is allowed."""
    return C_VALUE * max(eps(dtype), angle_eps(grade))


def grade(err: np.ndarray, allowed: np.ndarray, exact_allowed: Optional[np.ndarray]) -> str:
    """The contract errors meet: `exact` within the exact bound everywhere, `float32` within the
    float32 one, else `fail` (a kind with no exact bound grades a pass `float32`)."""
    if not np.all(err <= allowed):
        return "fail"
    if exact_allowed is not None and np.all(err <= exact_allowed):
        return "exact"
    return "float32"


def at_least(got: str, required: str) -> bool:
    """Whether grade `got` meets `required` (`exact` > `float32` > `fail`)."""
    if required not in ANGLE_DTYPE:
        raise UsageError(f"require must be one of {tuple(ANGLE_DTYPE)}, got {required!r}")
    return got in GRADES and GRADES.index(got) <= GRADES.index(required)
