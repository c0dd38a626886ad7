"""Correctness regression CI: every built-in implementation, through the path `verify` uses.

Parametrized from the registry, so a new implementation is covered the day it
is registered. An implementation unavailable here (no GPU) is skipped with its
reason, never reported as passing.

`nox -s tests` checks each kind's representative cases (`representative`: every convention
in every dtype, every field variant and form in float32, the large tables and long
contexts in float32);
`nox -s matrix` (`--matrix full`, which CI runs too) checks the full case list (the large
cases in every dtype, and the random cases, seeded so a run is repeatable). The verdicts are
computed once, in two worker processes that each take every other case of every kind (compiled
kernels come from the machine's on-disk caches), and each test reads its implementation's
verdicts. They are `check`'s, in a process of the same interpreter and source tree.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Sequence

import pytest

from harness import implementations
from harness.core import kinds
from harness.core.checks import Check, check

#: One xdist process runs the matrix (its verdicts fixture spreads it over WORKERS processes).
pytestmark = pytest.mark.xdist_group("matrix")
#: A case past this many elements is large: the representative matrix has it in float32 only.
LARGE = 2**17
IMPLS = implementations()
BY_NAME = {impl.name: impl for impl in IMPLS}
#: Worker processes for the matrix alone (`nox -s matrix`): one per core of the 2-core machine
#: the suite's time is promised on. Under xdist (`nox -s tests`) none: the verdicts are computed
#: in the xdist process itself, the other core running the other test files (pool workers
#: imported every framework that this process's collection had imported already, and loaded
#: every kernel cache again: the file under `-n 2` took 198 against 155 CPU-s here).
WORKERS = 2
#: Field variants and forms are checked in these dtypes in the representative matrix: the other
#: dtypes differ from float32 in precision and in how values are stored, which the quick cases
#: check on every convention in every dtype, not in how a variant's fields are read; `nox -s
#: matrix` (CI runs it) checks every variant in every dtype.
VARIANT_DTYPES = ("float32",)
#: A case's time limit (verify's is 120 s): a first call that compiles (torch-compile's inductor
#: builds C++ with g++ in a fresh environment, 17 s alone here) can pass 120 s when the matrix's
#: two processes share two cores with the rest of the suite. Hangs are still caught.
TIMEOUT_S = 300.0


def representative(kind: kinds.Kind) -> list[Any]:
    """The kind's cases without the random ones: the quick cases (every convention) in every
    dtype, the other variants in VARIANT_DTYPES, each large case in float32 only (the same code
    path as in the other dtypes, where the small cases and the far offsets check them)."""
    quick = {repr(spec) for spec in kind.cases(quick=True)}
    return [spec for spec in kind.cases(n_random=0) if repr(spec) in quick
            or spec.dtype == "float32" or (spec.dtype in VARIANT_DTYPES and spec.elements <= LARGE)]


def cases(matrix: str) -> dict[str, list[Any]]:
    """Each kind's case list: `full` (every case, the random ones seeded) or `representative`."""
    return {name: list(kind.cases()) if matrix == "full" else representative(kind)
            for name, kind in kinds.KINDS.items()}


def verdicts_of(names: Sequence[str], matrix: str, share: int = 0,
                shares: int = 1) -> dict[str, list[tuple[int, Check]]]:
    """Each named implementation checked on its kind's cases number share, share + shares, ...
    (run in a worker; (case number, verdict) pairs), case by case: every implementation of a kind
    on one case before the next, so that its reference and tolerance are computed once
    (harness.core.checks keeps the last few)."""
    specs = cases(matrix)
    found: dict[str, list[tuple[int, Check]]] = {name: [] for name in names}
    for kind in dict.fromkeys(BY_NAME[name].kind for name in names):
        mine = [name for name in names if BY_NAME[name].kind == kind]
        for number in range(share, len(specs[kind]), shares):
            for name in mine:
                found[name].append((number, check(BY_NAME[name], specs[kind][number], TIMEOUT_S)))
    return found


@pytest.fixture(scope="session")
def verdicts(request) -> dict[str, list[Check] | BaseException]:
    """The verdicts of the implementations this session's tests ask for (computed on first use):
    in this process under xdist, else in WORKERS processes that each check every implementation
    on every WORKERS-th case of its kind (shares of equal work, and a case's reference computed
    in one process only, where a share per backend computed each case's again for every
    backend); an exception, or a worker that died, leaves its exception as every
    implementation's entry (`python -m harness verify` names the one)."""
    wanted = sorted({item.callspec.params["impl"].name for item in request.session.items
                     if item.originalname == "test_implementation_matches_reference"
                     and item.callspec.params["impl"].available})
    matrix = request.config.getoption("matrix")
    # xdist's worker (its PYTEST_XDIST_* variables are gone by now: tests/conftest.py)
    if hasattr(request.config, "workerinput"):
        try:
            return {name: [c for _, c in pairs] for name, pairs in verdicts_of(wanted, matrix).items()}
        except Exception as exc:   # as a crashed worker's: the implementations fail, not the run
            return {name: exc for name in wanted}
    found: dict[str, list[tuple[int, Check]]] = {name: [] for name in wanted}
    with ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(verdicts_of, wanted, matrix, share, WORKERS) for share in range(WORKERS)]
        for future in futures:
            try:
                for name, pairs in future.result().items():
                    found[name] += pairs
            except Exception as exc:   # a crashed worker fails the implementations, not the run
                return {name: exc for name in wanted}
    return {name: [c for _, c in sorted(pairs, key=lambda p: p[0])] for name, pairs in found.items()}


@pytest.mark.parametrize("impl", IMPLS, ids=lambda i: i.name)
def test_implementation_matches_reference(impl, verdicts):
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    checks = verdicts[impl.name]
    if isinstance(checks, BaseException):
        raise checks
    bad = [f"{c.spec.short()}: {c.status}: {c.reason}" for c in checks if c.status in ("fail", "error")]
    assert not bad, "\n".join(bad)
    assert any(c.status == "pass" for c in checks), "supports no case of the matrix"


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.name.startswith("seed-")], ids=lambda i: i.name)
def test_seeds_run_their_own_convention(impl):
    """The seeds pass the paper (000/001/003/004) or the half-1 schedule (002) in float32."""
    if not impl.available:
        pytest.skip(impl.unavailable_reason())
    spec = kinds.KINDS["table"].cases()[0].replace(length=1500, d_model=128, dtype="float32")
    if impl.name.endswith("-cat"):
        spec = spec.replace(layout="concat", freq_shift=1)
    assert check(impl, spec).status == "pass"
