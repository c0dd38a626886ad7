"""Each library function's table on a few small specs against our float64 reference.

When a library upgrade changes a table, the failure names the library, its installed version and
the first differing (position, column), with the values: the line a reviewer needs to decide
whether the library or its pin moved. An implementation whose library is not installed skips.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import implementations
from harness.core import handover, kinds
from harness.core.convert import to_numpy

#: Specs per implementation and the most elements one may have (a few minutes on 2 cores).
SPECS_PER_IMPL = 3
MAX_ELEMENTS = 1 << 18
LIBRARY_IMPLS = [i for i in implementations() if i.origin.startswith("harness.impls.libraries.")]


def small_specs(impl) -> list:
    kind = kinds.named(impl.kind)
    work = kind.workload(impl.workload)
    fitting = [s for s in kind.cases(quick=True) if impl.supports(s) is None
               and work.elements(s, 2, 2) <= MAX_ELEMENTS]
    return fitting[:SPECS_PER_IMPL]


def first_difference(impl, spec) -> str | None:
    """None when every element is within tolerance, else the first one that is not, named."""
    kind = kinds.named(impl.kind)
    work = kind.workload(impl.workload)
    args = work.arguments(spec, 2, 2)
    out = handover.bound(impl, spec, args)()
    got = np.stack([to_numpy(p) for p in out]) if work.parts else to_numpy(out)
    expected, allowed = work.expected(spec, args, kind.reference(spec), kind.tolerance(spec))
    if got.shape != expected.shape:
        return f"shape {got.shape}, reference {expected.shape}"
    bad = ~(np.abs(got.astype(np.float64) - expected) <= allowed)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    part = f"{work.parts[index[0]]} " if work.parts else ""
    return (f"first differing {part}(position, column) = ({index[-2]}, {index[-1]}): "
            f"got {got[index]!r}, reference {expected[index]!r}, tolerance {allowed[index]:.3g}")


def test_every_library_implementation_is_here():
    """The parametrization below is not empty by accident (a renamed package would empty it)."""
    assert len({i.library for i in LIBRARY_IMPLS}) >= 6 and len(LIBRARY_IMPLS) >= 10


@pytest.mark.parametrize("impl", LIBRARY_IMPLS, ids=lambda i: i.name)
def test_library_table_is_unchanged(impl):
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    specs = small_specs(impl)
    assert specs, f"{impl.name} supports none of its kind's quick cases"
    problems = [f"{spec.short()}: {diff}" for spec in specs
                if (diff := first_difference(impl, spec)) is not None]
    assert not problems, (f"{impl.library} {impl.library_version} ({impl.name}) no longer matches "
                          f"the convention it claims:\n" + "\n".join(problems))
