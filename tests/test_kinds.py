"""A new kind of table is one module: a toy kind is judged by the same check() as the 1-D table."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pytest

import harness
from harness import Spec
from harness.core import kinds
from harness.core.checks import check
from harness.core.registry import Registry


@dataclass(frozen=True)
class Squares:
    """The toy kind's spec: the table p**2 for p < n."""

    n: int
    dtype: str = "float64"

    def as_dict(self) -> dict:
        return asdict(self)

    def short(self) -> str:
        return f"squares {self.n}"


SQUARES = kinds.Kind(
    name="squares", spec_type=Squares,
    reference=lambda s: np.arange(s.n, dtype=np.float64) ** 2,
    tolerance=lambda s: np.full(s.n, 1e-12),
    cases=lambda quick=False, n_random=0, seed=0: [Squares(3), Squares(10)],
    workloads=(kinds.Workload("squares", shape=lambda s, batch, heads: (s.n,)),),
    conventions={"plain": {}}, bench_spec=lambda length, width, dtype, convention: Squares(length))


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(kinds.KINDS, "squares", SQUARES)
    reg = Registry()
    reg.register(name="squares-right", backend="numpy", kind="squares", workload="squares",
                 supports=lambda s: None)(lambda s: (lambda: np.arange(s.n) ** 2.0))
    reg.register(name="squares-off", backend="numpy", kind="squares", workload="squares",
                 supports=lambda s: None)(lambda s: (lambda: np.arange(s.n) ** 2.0 + 1))
    reg.register(name="table-only", backend="numpy")(
        lambda s: (lambda: np.zeros((s.length, s.d_model), s.dtype)))
    return reg


def test_the_kind_is_found_by_its_spec_and_its_reference_is_public(toy):
    assert kinds.of(Squares(3)) is SQUARES and kinds.of(Spec(4, 4)).name == "table"
    np.testing.assert_array_equal(harness.reference(Squares(3)), [0.0, 1.0, 4.0])
    with pytest.raises(TypeError, match="spec of no known kind"):
        kinds.of(object())


def test_check_judges_each_kind_against_its_own_reference(toy):
    assert check(toy.get("squares-right"), Squares(10)).status == "pass"
    wrong = check(toy.get("squares-off"), Squares(10))
    assert wrong.status == "fail" and "tolerance" in wrong.reason
    crossed = check(toy.get("table-only"), Squares(3))
    assert crossed.status == "skip" and "builds a 'table'" in crossed.reason
    assert check(toy.get("squares-right"), Spec(4, 4)).status == "skip"


def test_an_unknown_kind_or_a_workload_the_kind_has_not_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        Registry().register(name="x", backend="numpy", kind="nope")(lambda s: None)
    with pytest.raises(ValueError, match="workload must be one of"):
        Registry().register(name="y", backend="numpy", workload="nope")(lambda s: None)
    with pytest.raises(ValueError, match="workload must be one of .*'forward'.* for kind 'table'"):
        Registry().register(name="z", backend="numpy", kind="table", workload="squares")(lambda s: None)


def test_verify_gives_each_kind_its_own_cases(toy, tmp_path, monkeypatch):
    from harness.verbs import verify

    impls = [toy.get("squares-right"), toy.get("table-only")]
    checks = [c for k in ("squares", "table") for c in verify.run(
        [i for i in impls if i.kind == k], kinds.named(k).cases(quick=True, n_random=0, seed=0))]
    squares = [c for c in checks if c.impl == "squares-right"]
    assert [c.spec for c in squares] == [Squares(3), Squares(10)]
    assert all(c.status == "pass" for c in squares)
    assert all(isinstance(c.spec, Spec) for c in checks if c.impl == "table-only")


@pytest.mark.parametrize("name", ["table", "rotary", "grid", "timestep"])
def test_every_kind_draws_valid_random_cases_for_any_seed_verify_may_pass(name):
    """`verify --random N --seed S` asks each kind for N random specs: none may be invalid."""
    kind = kinds.named(name)
    refused = {}
    for seed in range(10):
        try:
            specs = kind.cases(quick=False, n_random=16, seed=seed)
        except ValueError as exc:          # a draw the spec refuses: what verify stopped on
            refused[seed] = str(exc)
            continue
        assert len(specs) >= 16
    assert not refused, refused
