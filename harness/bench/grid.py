"""The sweep grid and the cells it expands to, roofs included.

Axes: workload x length x d_model x dtype x threads x device (each
implementation's own), and on a GPU x timing mode (harness.bench.modes) with
the GPU's dtypes (half precision included) instead of threads. Tables over
`max_elements` are left out so memory and time stay sane; the pure-Python
backend has no thread pool and is timed at one thread only; anything slower
still is left to the budgets (`budget`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from harness import backends
from harness.bench.cells import Cell, choose_convention
from harness.bench.modes import MODES, QUICK_MODES, modes_for
from harness.bench.roofs import roofs_for
from harness.core import kinds
from harness.core.registry import Implementation

DEFAULT_LENGTHS = (64, 512, 4096, 8192, 65536)
DEFAULT_D_MODELS = (64, 256, 1024, 4096)
DEFAULT_MAX_ELEMENTS = 1 << 24          # 16 Mi elements: 64 MiB float32 (8192 x 1024 is in)
QUICK_LENGTHS = (64, 4096)
QUICK_D_MODELS = (64, 512)
DEVICE_DTYPES = ("float32", "float16", "bfloat16")
#: Library-convention implementations are correctness references: timed only when --only asks.
REFERENCE_ONLY = "lib-*"


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep; every combination within `max_elements` is a cell."""

    lengths: tuple[int, ...]
    d_models: tuple[int, ...]
    dtypes: tuple[str, ...]
    threads: tuple[int, ...]
    workloads: tuple[str, ...] = kinds.named("table").workload_names
    batch: int = 2
    max_elements: int = DEFAULT_MAX_ELEMENTS
    device_dtypes: tuple[str, ...] = DEVICE_DTYPES     # dtypes of cells on a GPU
    modes: tuple[str, ...] = MODES                     # how GPU cells are timed

    def shapes(self) -> list[tuple[int, int]]:
        """(length, d_model) pairs whose table fits `max_elements`; none at all is an error."""
        shapes = [(n, d) for n in self.lengths for d in self.d_models if n * d <= self.max_elements]
        if not shapes:
            raise ValueError(f"--max-elements {self.max_elements} leaves no (length, d_model) pair "
                             f"of --lengths {self.lengths} x --d-models {self.d_models}: raise it "
                             "or choose smaller sizes")
        return shapes


def default_grid(cores: int, quick: bool = False) -> Grid:
    """64 .. 65 536 positions x 64 .. 4096 wide (capped), float32/64, 1 and all cores."""
    threads = tuple(sorted({1, cores}))
    if quick:
        return Grid(QUICK_LENGTHS, QUICK_D_MODELS, ("float32",), threads, modes=QUICK_MODES)
    return Grid(DEFAULT_LENGTHS, DEFAULT_D_MODELS, ("float32", "float64"), threads)


@dataclass(frozen=True)
class Plan:
    """Cells to time, cells that cannot run (recorded as skips) and implementations not here."""

    cells: tuple[Cell, ...]
    unsupported: tuple[tuple[Cell, str], ...] = ()
    unavailable: dict[str, str] = field(default_factory=dict)


def choose(impls: Iterable[Implementation], only: Sequence[str]) -> list[Implementation]:
    """Implementations matching --only; without it, all but the library-convention references."""
    if only:
        return [i for i in impls if any(fnmatch.fnmatch(i.name, g) for g in only)]
    return [i for i in impls if not fnmatch.fnmatch(i.name, REFERENCE_ONLY)]


def plan(impls: Iterable[Implementation], grid: Grid) -> Plan:
    """Every implementation's cells, then the roof cells for every distinct output they produce."""
    cells: list[Cell] = []
    unsupported: list[tuple[Cell, str]] = []
    unavailable: dict[str, str] = {}
    for impl in impls:
        if impl.workload not in grid.workloads:
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
    return Plan(tuple(cells) + tuple(_roof_cells(cells)), tuple(unsupported), unavailable)


def _impl_cells(impl: Implementation, grid: Grid) -> Iterable[tuple[Cell, str]]:
    threads, dtypes = grid.threads, grid.dtypes
    on_device = impl.device != "cpu"
    if not backends.get(impl.backend).threaded or on_device:   # a GPU's time is not the host's
        threads = (min(threads),)
    if on_device:
        dtypes = grid.device_dtypes
    batch = grid.batch if impl.workload == "forward" else 1
    for length, d_model in grid.shapes():
        for dtype in dtypes:
            convention, reason = choose_convention(impl, length, d_model, dtype)
            for n in threads:
                for mode in modes_for(impl.backend, impl.device, grid.modes):
                    yield Cell(impl.name, impl.backend, impl.device, impl.workload,
                               convention or "paper", length, d_model, dtype, n, batch,
                               mode=mode), reason


def _roof_cells(cells: Sequence[Cell]) -> Iterable[Cell]:
    """NumPy's roof for every CPU output, another backend's only when that backend is timed;
    every available device roof for a device output (any backend's kernels write the same DRAM)."""
    timed = {"numpy"} | {c.backend for c in cells}
    outputs = sorted({(c.workload, c.device, c.length, c.d_model, c.dtype, c.threads, c.batch,
                       c.mode) for c in cells})
    for workload, device, length, d_model, dtype, threads, batch, mode in outputs:
        for roof in roofs_for(workload, device):
            if device == "cpu" and roof.backend not in timed:
                continue
            if mode not in modes_for(roof.backend, device):
                continue
            convention, _ = choose_convention(roof, length, d_model, dtype)
            if convention is not None:
                yield Cell(roof.name, roof.backend, device, workload, convention, length, d_model,
                           dtype, threads, batch, is_roof=True, mode=mode)
