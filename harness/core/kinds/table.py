"""The 1-D sinusoidal table `[length, d_model]`: the Spec, its reference, tolerance and cases.

The pieces live in harness/core (spec.py, reference.py, tolerance.py, cases.py) because
identify, precision and the fast implementations' tests use them directly; this module
is what makes them a kind.
"""

from harness.core.cases import default_cases
from harness.core.kinds import Kind, add
from harness.core.reference import reference
from harness.core.spec import Spec
from harness.core.tolerance import tolerance

TABLE = add(Kind(name="table", spec_type=Spec, reference=reference, tolerance=tolerance,
                 cases=default_cases, workloads=("table", "forward")))
