"""The sweep grid and the cells it expands to, roofs included.

Axes: workload x length x width x dtype x threads x device (each implementation's own),
and on a GPU x timing mode (harness.bench.modes) with the GPU's dtypes (half precision
included) instead of threads. Each kind of table (harness.core.kinds) maps length x width
onto its spec (a 1-D table's positions x d_model, a rotary cache's positions x head_dim, a
grid's cells x d_model, timesteps x dim) and brings its own default sizes and dtypes; axes
given on the command line apply to every kind. Tables over `max_elements` are left out, and
batched cells (forward, rotary apply) past BATCHED_ELEMENTS times that (the default batch is cut
to fit first), so memory and time stay sane; the pure-Python backend has no thread pool and is timed at one thread only; anything
slower still is left to the budgets (`budget`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Optional, Sequence

from harness import backends
from harness.bench.cells import Cell, choose_convention
from harness.bench.modes import MODES, QUICK_MODES, modes_for
from harness.bench.roofs import LARGEST_ONLY, roofs_for
from harness.core import kinds
from harness.core.registry import Implementation
from harness.runs.identity import CellKey
from harness.util.exitcodes import UsageError

_TABLE = kinds.named("table")
DEFAULT_LENGTHS, DEFAULT_D_MODELS = _TABLE.bench_sizes
QUICK_LENGTHS, QUICK_D_MODELS = _TABLE.bench_sizes_quick
DEFAULT_MAX_ELEMENTS = 1 << 24          # 16 Mi elements: 64 MiB float32 (8192 x 1024 is in)
#: A batched cell (x + PE for a batch, q and k rotated) may write this many tables' elements
#: (q and k at batch 1 are two); its default batch is first cut to write about one table's.
BATCHED_ELEMENTS = 2
DEVICE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep. Empty `lengths`, `d_models` or `dtypes` mean each kind's own
    defaults (`quick` ones with quick), of which a sweep times a few landmark shapes (one per
    size regime the report answers: `landmarks`) unless `full` asks for every combination;
    lengths or widths given on the command line are timed in every combination."""

    lengths: tuple[int, ...]
    d_models: tuple[int, ...]
    dtypes: tuple[str, ...]
    threads: tuple[int, ...]
    workloads: tuple[str, ...] = ()                    # empty: every kind's every workload
    batch: Optional[int] = None                       # None: each batched workload's bench_batch
    max_elements: int = DEFAULT_MAX_ELEMENTS
    device_dtypes: tuple[str, ...] = DEVICE_DTYPES     # dtypes of cells on a GPU
    modes: tuple[str, ...] = MODES                     # how GPU cells are timed
    heads: Optional[int] = None                       # attention heads (a rotary apply); None: its bench_heads
    quick: bool = False
    #: time every implementation in this named convention (one its kind has); "": each in the
    #: first of its kind's conventions it supports
    convention: str = ""
    full: bool = False
    #: time the fewest threads at each kind's largest landmark only (the default sweep: its
    #: answers are at all cores; how an implementation scales is read where it matters most)
    scaling_at_largest: bool = False

    def shapes(self, kind: kinds.Kind = _TABLE) -> list[tuple[int, int]]:
        """(length, width) pairs of `kind` (the 1-D table's by default) whose table fits
        `max_elements`; none at all is an error."""
        sizes = kind.bench_sizes_quick if self.quick else kind.bench_sizes
        lengths, widths = self.lengths or sizes[0], self.d_models or sizes[1]
        shapes = [(n, d) for n in lengths for d in widths if n * d <= self.max_elements]
        if not shapes:
            raise UsageError(f"--max-elements {self.max_elements} leaves no (length, d_model) pair "
                             f"of --lengths {lengths} x --d-models {widths}: raise it "
                             "or choose smaller sizes")
        if self.full or self.lengths or self.d_models:
            return shapes
        return landmarks(shapes, 2 if self.quick else 3)

    def threads_at(self, kind: kinds.Kind, shape: tuple[int, int]) -> tuple[int, ...]:
        """The thread counts a `shape` of `kind` is timed at."""
        if not self.scaling_at_largest or len(self.threads) < 2 or self.lengths or self.d_models:
            return self.threads
        largest = max(self.shapes(kind), key=lambda s: (s[0] * s[1], s[0]))
        return self.threads if shape == largest else (max(self.threads),)

    def dtypes_of(self, kind: kinds.Kind) -> tuple[str, ...]:
        return self.dtypes or (kind.bench_dtypes_quick if self.quick else kind.bench_dtypes)

    def timed(self, workload: str) -> bool:
        return not self.workloads or workload in self.workloads


#: Elements (length x width) up to which a table is small: the report's first size regime.
SMALL_ELEMENTS = 2**16
#: Elements from which a table is large: the report's last size regime (harness.report's
#: REGIMES; between the two, medium).
LARGE_ELEMENTS = 2**24


def landmarks(shapes: Sequence[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """`count` (2 or 3) shapes that answer each size regime the report speaks of: the largest
    small one (<= SMALL_ELEMENTS, else the smallest), the largest, and with three the one
    nearest their geometric mean in elements, where neither of the others is medium (a kind
    whose largest is medium, a rotary cache or apply or a grid, gets no second medium size:
    the report's medium answer is already there; those were 26 s of a quiet default sweep's
    665). A tie goes to the longer table. Timing every combination of a kind's axes (`--full`)
    answers the same questions in three times the cells."""
    def size(shape: tuple[int, int]) -> tuple[int, int]:
        return (shape[0] * shape[1], shape[0])

    ordered = sorted(set(shapes), key=size)
    small = [s for s in ordered if size(s)[0] <= SMALL_ELEMENTS]
    first, last = (small[-1] if small else ordered[0]), ordered[-1]
    chosen = [first, last]
    middle = [s for s in ordered if s not in chosen]
    medium = any(SMALL_ELEMENTS < size(s)[0] < LARGE_ELEMENTS for s in chosen)
    if count >= 3 and middle and not medium:
        centre = math.log(size(first)[0] * size(last)[0]) / 2
        chosen.insert(1, min(middle, key=lambda s: (abs(math.log(size(s)[0]) - centre), -s[0])))
    return sorted(set(chosen), key=size)


def default_grid(cores: int, quick: bool = False, full: bool = False) -> Grid:
    """Each kind's sizes and dtypes at all cores, and at 1 thread too at each kind's largest
    landmark (--full: every size at both; GPU cells in every mode). --quick: at all cores only (what is fastest here; how each scales is the default sweep's question), GPU
    cells synced only."""
    threads = (cores,) if quick else tuple(sorted({1, cores}))
    return Grid((), (), (), threads, modes=QUICK_MODES if quick else MODES, quick=quick,
                full=full, scaling_at_largest=not (quick or full))


@dataclass(frozen=True)
class Plan:
    """Cells to time, cells that cannot run (recorded as skips) and implementations not here."""

    cells: tuple[Cell, ...]
    unsupported: tuple[tuple[Cell, str], ...] = ()
    unavailable: dict[str, str] = field(default_factory=dict)


def plan(impls: Iterable[Implementation], grid: Grid) -> Plan:
    """Every implementation's cells, then the roof cells for every distinct output they produce."""
    cells: list[Cell] = []
    unsupported: list[tuple[Cell, str]] = []
    unavailable: dict[str, str] = {}
    for impl in impls:
        if not grid.timed(impl.workload):
            continue
        why = impl.unavailable_reason()
        if why:
            unavailable[impl.name] = why
            continue
        for cell, reason in _impl_cells(impl, grid):
            if reason:
                unsupported.append((cell, reason))
            else:
                cells.append(cell)
    return Plan(tuple(cells) + tuple(_roof_cells(cells, every_size=grid.full)), tuple(unsupported),
                unavailable)


def _impl_cells(impl: Implementation, grid: Grid) -> Iterable[tuple[Cell, str]]:
    kind = kinds.named(impl.kind)
    work = kind.workload(impl.workload)
    threads, dtypes = grid.threads, grid.dtypes_of(kind)
    on_device = impl.device != "cpu"
    if not backends.get(impl.backend).threaded or on_device:   # a GPU's time is not the host's
        threads = (min(threads),)
    if on_device:
        dtypes = grid.device_dtypes
    batched = work.batched
    batch = (grid.batch or work.bench_batch) if batched else 1
    heads = (grid.heads or work.bench_heads) if work.heads else 1
    for length, d_model in grid.shapes(kind):
        counts = threads if len(threads) < 2 else grid.threads_at(kind, (length, d_model))
        for dtype in dtypes:
            convention, reason = choose_convention(impl, length, d_model, dtype, grid.convention)
            for n in counts:
                for mode in modes_for(impl.backend, impl.device, grid.modes):
                    cell = Cell(impl.name, impl.backend, impl.device, impl.workload,
                                convention or kind.first_convention, length, d_model, dtype,
                                n, batch, mode=mode, heads=heads, kind=impl.kind)
                    if batched and grid.batch is None:
                        cell = _fitted_batch(cell, grid.max_elements)
                    if batched and convention and cell.elements > BATCHED_ELEMENTS * grid.max_elements:
                        if grid.lengths or grid.d_models:   # sizes asked for are never dropped unsaid
                            yield cell, (f"writes {cell.elements:,} elements, over "
                                         f"{BATCHED_ELEMENTS} x --max-elements {grid.max_elements:,}: "
                                         "raise --max-elements to time it")
                        continue
                    yield cell, reason


def _size(cell: Any) -> tuple[int, int]:
    """A cell's (or output's) size as the report orders them: elements, then length."""
    return (cell.length * cell.d_model, cell.length)


def _fitted_batch(cell: Cell, most: int) -> Cell:
    """`cell` with its workload's default batch halved until it writes at most `most` elements
    (at least one): the largest lengths are timed at batch 1, where a batch of copies of an
    already memory-bound call would only make the sweep longer."""
    while cell.batch > 1 and cell.elements > most:
        cell = replace(cell, batch=max(1, cell.batch // 2))
    return cell


def _roof_cells(cells: Sequence[Cell], every_size: bool = False) -> Iterable[Cell]:
    """NumPy's roof for every CPU output, another backend's only when that backend is timed;
    every available device roof for a device output (any backend's kernels write the same DRAM).
    An output is a result shape: conventions of a kind that write different shapes (a grid with
    cls rows) get roofs of their own, in their convention. Below the largest size of its
    workload and dtype, a CPU output gets no roof of harness.bench.roofs.LARGEST_ONLY (the
    Roofs table reads them at the largest), unless `every_size`."""
    timed = {"numpy"} | {c.backend for c in cells}
    outputs: dict[tuple[CellKey, str, tuple[int, ...]], str] = {}
    largest: dict[tuple, tuple[int, int]] = {}
    for c in cells:
        outputs.setdefault((replace(c.identity, impl=""), c.kind, c.shape), c.convention)
        where = (c.workload, c.device, c.dtype)
        largest[where] = max(largest.get(where, (0, 0)), _size(c))
    for key in sorted(outputs, key=str):
        out, kind = key[0], key[1]
        below = out.device == "cpu" and not every_size and (
            _size(out) < largest[(out.workload, out.device, out.dtype)])
        for roof in roofs_for(out.workload, out.device):
            if out.device == "cpu" and roof.backend not in timed:
                continue
            if below and roof.name in LARGEST_ONLY:
                continue
            if out.mode not in modes_for(roof.backend, out.device):
                continue
            convention = outputs[key]
            if roof.supports(kinds.named(kind).bench_spec(out.length, out.d_model, out.dtype,
                                                          convention)):
                convention, _ = choose_convention(roof, out.length, out.d_model, out.dtype)
            if convention is not None:
                yield Cell(roof.name, roof.backend, out.device, out.workload, convention,
                           out.length, out.d_model, out.dtype, out.threads, out.batch,
                           is_roof=True, mode=out.mode, heads=out.heads, kind=kind)
