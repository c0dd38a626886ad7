"""What a sweep times: one landmark shape per size regime, all cores (and one thread at the
largest), the default batch cut to fit, and the cells an earlier measurement proves far behind."""

from __future__ import annotations

from dataclasses import replace

from harness.bench.grid import Grid, plan
from tests.test_bench_units import cell, ok


def test_the_default_grid_times_one_landmark_per_size_regime_and_full_every_size():
    from harness.bench.grid import DEFAULT_D_MODELS, default_grid, landmarks

    thin, full = default_grid(2).shapes(), default_grid(2, full=True).shapes()
    assert len(thin) == 3 and set(thin) < set(full)
    assert {d for _, d in full} == set(DEFAULT_D_MODELS)
    regimes = {min(2, (n * d > 2**16) + (n * d >= 2**24)) for n, d in thin}
    assert regimes == {0, 1, 2}                             # small, medium and large all timed
    assert max(thin, key=lambda s: s[0] * s[1]) == max(full, key=lambda s: (s[0] * s[1], s[0]))
    quick = default_grid(2, quick=True).shapes()
    assert len(quick) == 2 and min(n * d for n, d in quick) <= 2**16
    # the largest small one, the largest, and the one nearest their geometric mean
    shapes = [(a, b) for a in (16, 256, 65536) for b in (8, 64, 256)]
    assert landmarks(shapes, 3) == [(256, 256), (65536, 8), (65536, 256)]
    assert landmarks(shapes, 2) == [(256, 256), (65536, 256)]
    assert landmarks([(8, 8)], 3) == [(8, 8)]
    # ... unless the largest is medium already: a second medium size answers nothing more
    medium = [(a, b) for a in (16, 256, 4096) for b in (8, 64, 256)]
    assert landmarks(medium, 3) == landmarks(medium, 2) == [(256, 256), (4096, 256)]


def test_the_grids_size_regimes_are_the_reports():
    from harness.bench.grid import LARGE_ELEMENTS, SMALL_ELEMENTS
    from harness.report.recommend import REGIMES

    small, medium, large = REGIMES
    assert (small.hi, medium.lo, medium.hi, large.lo) == (
        SMALL_ELEMENTS + 1, SMALL_ELEMENTS + 1, LARGE_ELEMENTS, LARGE_ELEMENTS)


def test_the_default_grid_times_one_thread_at_each_kinds_largest_landmark_only():
    from harness.bench.grid import default_grid
    from harness.core import kinds

    table, grid = kinds.named("table"), default_grid(2)
    small, middle, large = grid.shapes(table)
    assert grid.threads_at(table, large) == (1, 2)
    assert grid.threads_at(table, small) == grid.threads_at(table, middle) == (2,)
    full = default_grid(2, full=True)
    assert all(full.threads_at(table, s) == (1, 2) for s in full.shapes(table))
    assert replace(grid, lengths=(64, 128)).threads_at(table, (64, 1024)) == (1, 2)


def test_a_quick_grid_times_all_cores_only_and_lengths_given_are_timed_in_every_combination():
    from harness.bench.grid import Grid, default_grid

    assert default_grid(4, quick=True).threads == (4,)
    assert default_grid(4).threads == (1, 4)
    given = Grid((8, 16), (4, 6), (), (1,))
    assert sorted(given.shapes()) == [(8, 4), (8, 6), (16, 4), (16, 6)]


def test_a_one_thread_cell_proven_far_behind_at_all_cores_is_left_out():
    from harness.bench.prune import FAR, far_behind

    def two(impl: str, median_s: float, **extra) -> dict:
        return {**ok(cell(impl=impl, threads=2), median_s), "cores": 2, "others_busy": 0.0, **extra}

    fast, slow = two("fast", 1e-3), two("slow", 2 * FAR * 1e-3 * 1.01)
    at_one = cell(impl="slow")
    assert "far behind" in far_behind(at_one, [fast, slow])
    # within reach if the fastest lost all of its 2x at one thread: timed
    assert far_behind(at_one, [fast, two("slow", 2 * FAR * 1e-3 * 0.99)]) is None
    # an all-core time taken under load proves nothing; nor is a cell at the most threads, or a
    # roof, ever left out this way
    assert far_behind(at_one, [fast, two("slow", 1.0, others_busy=1.9)]) is None
    assert far_behind(cell(impl="slow", threads=2), [fast, slow]) is None
    assert far_behind(cell(impl="slow", is_roof=True), [fast, slow]) is None
    # another size, dtype or thread count is no sibling
    assert far_behind(cell(impl="slow", length=128), [fast, slow]) is None


def test_the_usual_choice_is_timed_at_one_thread_however_far_behind():
    from harness.bench.prune import far_behind
    from harness.core import kinds

    usual = kinds.named("table").workload("table").usual_on("cpu")[0]
    rows = [{**ok(cell(impl=i, threads=2), t), "cores": 2, "others_busy": 0.0}
            for i, t in (("fast", 1e-6), (usual, 1.0))]
    assert far_behind(cell(impl=usual), rows) is None


def _at_two(impl: str, median_s: float, **extra) -> dict:
    c = cell(impl=impl, threads=2, is_roof=impl.startswith("roof-"))
    return {**ok(c, median_s), "cores": 2, "others_busy": 0.0, **extra}


def test_one_thread_is_timed_for_the_contenders_at_all_cores_only():
    from harness.bench.prune import CONTENDERS, left_out, not_contender
    from harness.core import kinds

    ranked = [_at_two(f"i{n}", (n + 1) * 1e-3) for n in range(CONTENDERS + 1)]
    last = f"i{CONTENDERS}"
    assert "not a contender" in not_contender(cell(impl=last), ranked)
    assert "not a contender" in left_out(cell(impl=last), ranked)     # what the worker asks
    assert all(not_contender(cell(impl=f"i{n}"), ranked) is None for n in range(CONTENDERS))
    # two contenders: the third fastest at all cores is not timed at one thread
    three = [_at_two(f"j{n}", (n + 1) * 1e-3) for n in range(3)]
    assert "not a contender" in not_contender(cell(impl="j2"), three)
    assert not_contender(cell(impl="j1"), three) is None
    # a faster one flagged at all cores proves nothing against it; nor does its own flagged row
    busy = [dict(ranked[0], others_busy=1.9)] + ranked[1:]
    assert not_contender(cell(impl=last), busy) is None
    assert not_contender(cell(impl=last), ranked[:-1] + [dict(ranked[-1], others_busy=1.9)]) is None
    # a faster one that the reference judged invalid afterwards (its newest row) counts no more
    judged = ranked + [{**ranked[0], "status": "invalid"}]
    assert not_contender(cell(impl=last), judged) is None
    caught = [dict(ranked[0], inputs="inputs: ignores its inputs")] + ranked[1:]
    assert not_contender(cell(impl=last), caught) is None
    # the usual choice, a cell at the most threads, another size: always timed
    usual = kinds.named("table").workload("table").usual_on("cpu")[0]
    assert not_contender(cell(impl=usual), ranked + [_at_two(usual, 1.0)]) is None
    assert not_contender(cell(impl=last, threads=2), ranked) is None
    assert not_contender(cell(impl=last, length=128), ranked) is None


def test_an_implementation_left_out_at_all_cores_as_far_behind_is_not_timed_at_one_thread():
    from harness.bench.cells import Outcome, row
    from harness.bench.prune import not_contender

    far = {**row(cell(impl="slow", threads=2), Outcome("skip", "far behind: 9x the fastest at 32x64")),
           "cores": 2}
    over_budget = {**far, "reason": "over budget: ..."}
    assert "far behind" in not_contender(cell(impl="slow"), [_at_two("fast", 1e-3), far])
    assert not_contender(cell(impl="slow"), [_at_two("fast", 1e-3), over_budget]) is None


def test_a_roof_that_cannot_bind_at_one_thread_is_left_out():
    from harness.bench.prune import not_contender

    fill, slow = _at_two("roof-fill", 1e-3), _at_two("roof-slow-fill", 2 * 1e-3 * 1.01)
    sincos = _at_two("roof-sincos-numpy", 50e-3)      # compute: another bound, kept
    rows = [fill, slow, sincos]
    assert "cannot bind" in not_contender(cell(impl="roof-slow-fill", is_roof=True), rows)
    near = [fill, _at_two("roof-slow-fill", 2 * 1e-3 * 0.99), sincos]
    assert not_contender(cell(impl="roof-slow-fill", is_roof=True), near) is None
    assert not_contender(cell(impl="roof-sincos-numpy", is_roof=True), rows) is None
    assert not_contender(cell(impl="roof-fill", is_roof=True), rows) is None


def test_the_default_batch_is_cut_at_the_largest_lengths_and_a_given_one_is_kept():
    from harness import implementations

    impls = [i for i in implementations(()) if i.name in ("numpy-forward", "rotary-numpy-apply-unfused")]
    cells = plan(impls, Grid((64, 32768), (128, 512), ("float32",), (1,))).cells
    batch = {(c.workload, c.length, c.d_model): c.batch for c in cells if not c.is_roof}
    assert batch[("forward", 64, 512)] == 2 and batch[("forward", 32768, 512)] == 1
    assert batch[("apply", 64, 128)] == 2 and batch[("apply", 32768, 128)] == 1
    given = plan(impls, Grid((64,), (128,), ("float32",), (1,), batch=3)).cells
    assert {c.batch for c in given} == {3}


def test_a_batched_cell_over_the_element_cap_at_a_size_asked_for_is_a_skip_that_says_so():
    from harness import implementations

    impls = [i for i in implementations(()) if i.name == "rotary-numpy-apply-unfused"]
    asked = plan(impls, Grid((1024, 4096), (128,), ("float32",), (1,), heads=8,
                             max_elements=2**20))
    timed = {c.length for c in asked.cells if not c.is_roof}
    said = {c.length: why for c, why in asked.unsupported}
    assert timed == {1024} and "raise --max-elements" in said[4096]


def test_a_cell_proven_far_behind_at_the_next_smaller_size_is_left_out():
    from harness.bench.prune import FAR_SMALLER, behind_at_smaller

    def at(impl: str, length: int, median_s: float, **extra) -> dict:
        return {**ok(cell(length=length, impl=impl), median_s), "cores": 2, "others_busy": 0.0,
                **extra}

    smaller = [at("fast", 64, 1e-3), at("slow", 64, FAR_SMALLER * 1e-3 * 1.01)]
    assert "far behind" in behind_at_smaller(cell(length=256, impl="slow"), smaller)
    # 5x behind is far enough: in a quiet default run none that far behind won the next size
    five = [at("fast", 64, 1e-3), at("slow", 64, 5e-3)]
    assert "far behind" in behind_at_smaller(cell(length=256, impl="slow"), five)
    assert behind_at_smaller(cell(length=256, impl="fast"), smaller) is None
    near = [at("fast", 64, 1e-3), at("slow", 64, FAR_SMALLER * 1e-3 * 0.99)]
    assert behind_at_smaller(cell(length=256, impl="slow"), near) is None
    # the next smaller size decides: close at 128, although far at 64
    assert behind_at_smaller(cell(length=256, impl="slow"),
                             smaller + [at("fast", 128, 1e-3), at("slow", 128, 2e-3)]) is None
    # a smaller size timed under load, a larger one, a roof, or another dtype prove nothing
    busy = [at("fast", 64, 1e-3), at("slow", 64, 1.0, others_busy=1.9)]
    assert behind_at_smaller(cell(length=256, impl="slow"), busy) is None
    assert behind_at_smaller(cell(length=32, impl="slow"), smaller) is None
    assert behind_at_smaller(cell(length=256, impl="slow", is_roof=True), smaller) is None
    assert behind_at_smaller(cell(length=256, impl="slow", dtype="float64"), smaller) is None


def test_full_prunes_nothing():
    from harness import cli
    from harness.bench import cli as bench_cli, options

    def limits(*argv: str):
        return options.parse(cli.parse({"bench": bench_cli}, ["bench", *argv])).limits

    assert limits().prune and not limits("--full").prune


def test_roofs_of_two_output_shapes_at_one_size_are_two_cells_of_the_journal():
    """A grid with a cls row and a 3-D grid at the same length write different shapes: each
    gets its roofs, and every cell of the plan has a key of its own (the journal keeps one row
    per key: with one key for both, the cls grids were left without a roof)."""
    from harness import implementations
    from harness.bench.grid import default_grid

    wanted = {"grid-numpy", "diffusers-3d-sincos"}
    impls = [i for i in implementations() if i.name in wanted and i.available]
    cells = plan(impls, default_grid(2)).cells
    roofs = [c for c in cells if c.is_roof]
    assert len(impls) == 2 and len({c.convention for c in roofs}) == 2
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)[:4]


def test_the_largest_size_only_roofs_stand_beside_each_dtypes_largest_output_and_every_size_with_full():
    """The streaming fills and the fresh numpy-torch roofs (the Roofs table's, read at the
    largest size) are planned at each workload x dtype's largest size only; `--full` plans every
    roof at every size, and the roofs that pick the fastest fill at a size stay at all of them."""
    from harness import implementations
    from harness.bench.grid import default_grid
    from harness.bench.roofs import LARGEST_ONLY

    wanted = {"numpy-cat", "torch-cat", "numba-angleadd"}     # the roofs' three backends
    impls = [i for i in implementations() if i.name in wanted and i.available]
    assert len(impls) == 3
    for full in (False, True):
        cells = plan(impls, default_grid(2, full=full)).cells
        sizes: dict[str, int] = {}
        for c in cells:
            sizes[c.dtype] = max(sizes.get(c.dtype, 0), c.length * c.d_model)
        roofs = [c for c in cells if c.is_roof and c.device == "cpu"]
        below = {c.impl for c in roofs if c.length * c.d_model < sizes[c.dtype]}
        at_largest = {c.impl for c in roofs if c.length * c.d_model == sizes[c.dtype]}
        assert {"roof-numpy-torch-fill", "roof-stream-fill"} <= at_largest & LARGEST_ONLY
        assert {"roof-numpy-fill", "roof-recycled-fill", "roof-torch-fill"} <= below
        assert bool(below & LARGEST_ONLY) == full, sorted(below & LARGEST_ONLY)
