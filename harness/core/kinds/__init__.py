"""Kinds of table: what every verb needs to know to judge one kind of positional encoding.

A kind is one package under harness/core/kinds that builds one `Kind`: its spec type, its
float64 reference and per-element tolerance, verify's cases, its named conventions, how
bench's axes (length x width x dtype) become a spec, and its workloads. The 1-D
`[length, d_model]` table (kinds/table/), the rotary cos/sin cache and its apply
(kinds/rotary/), the 2-D/3-D grids (kinds/grid/) and diffusion timestep embeddings
(kinds/timestep/) are kinds. `checks.check`, `verify` and bench reach a kind only through
`of(spec)` and `named(name)`, so a new kind needs no change to them; each implementation
says which kind and workload it builds (`register(kind=..., workload=...)`).

A workload is what one implementation's callable does. Its name is unique across kinds
(the report keys its sections by it). It may take inputs at every call (a forward's `x`, an
apply's q, k and positions: NumPy here, handed over in the implementation's backend by
harness.core.handover), and may return several arrays (`parts`: a rotary cache's cos
and sin), which the checks judge stacked, in order, against the reference the workload
expects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from harness.util.exitcodes import UsageError

#: (spec, batch, heads) -> the NumPy inputs a workload's callable is handed at every call
#: (converted to its backend by harness.core.handover)
Inputs = Callable[[Any, int, int], tuple]
#: (spec, batch, heads) -> the shape of the result (a tuple result's parts stacked first)
Shape = Callable[[Any, int, int], tuple[int, ...]]
#: (spec, inputs, reference, tolerance) -> (expected, allowed) for those inputs
Expect = Callable[[Any, tuple, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
#: (spec, the implementation's declared forms) -> None, or why it does not take this case
Accepts = Callable[[Any, Any], Optional[str]]

#: What one call reads and writes, and so which roof measures it (harness.bench.roofs):
WRITES = "writes"    # writes its output and reads nothing: a bare fill of the same bytes
ADDS = "adds"        # reads an input x and writes x + a table of x's rows: a bare x + y
PASSES = "passes"    # reads its inputs and writes them back changed: a bare pass over them
TRAFFIC = (WRITES, ADDS, PASSES)


@dataclass(frozen=True)
class Arrangement:
    """A tuple result's parts as returned (`shapes`), and how they become the one array the
    reference is (`join`: stacked, by default; a rotary apply's q and k, which may differ in
    layout and heads, in their canonical form)."""

    shapes: tuple[tuple[int, ...], ...]
    join: Callable[[list], np.ndarray] = np.stack


@dataclass(frozen=True)
class Workload:
    """One thing an implementation of a kind can be asked to do, and how it is judged."""

    name: str
    shape: Shape                          # what one call returns (parts stacked first)
    parts: tuple[str, ...] = ()           # names of a tuple result's arrays; () for one array
    inputs: Optional[Inputs] = None       # None: its callable takes no argument
    expect: Optional[Expect] = None       # None: the kind's reference and tolerance as they are
    batched: bool = False                 # its inputs have a batch axis bench sweeps
    heads: bool = False                   # ... and an attention-heads axis (a rotary apply)
    #: a compute-bound workload's float64 angles (one sin and one cos each): bench times the same
    #: count of float32 sines and cosines beside it, its compute roof (harness.bench.roofs)
    angles: Optional[Callable[[Any], np.ndarray]] = None
    #: how a tuple result's parts are returned and joined; None: each of shape[1:], stacked
    arrange: Optional[Callable[[Any, int, int], Arrangement]] = None
    #: the type of the forms an implementation declares at registration (`register(forms=...)`);
    #: None: this workload has one form only. Its `every(gqa)` is what a roof passing over the
    #: inputs declares (every form; gqa=False: k with q's heads only)
    forms: Optional[type] = None
    #: whether an implementation declaring `forms` takes a case; None: every case
    accepts: Optional[Accepts] = None
    #: the forms a case asks for (what a callable handed that case is taken to declare)
    forms_of: Optional[Callable[[Any], Any]] = None
    #: the names of `inputs`, for reasons (an out-of-place implementation that wrote into one)
    input_names: tuple[str, ...] = ()
    #: how a case hands its inputs over, added to a failure's reason (None: nothing to add)
    describe: Optional[Callable[[Any], Optional[str]]] = None
    #: the usual choice per device, what code starts from there: (device, implementation names in
    #: order of preference) pairs; the first timed is the report's baseline, the CPU's first its
    #: default (tritonbench's `baseline=True`, said by the workload that knows it)
    usual: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: what one call reads and writes (WRITES, ADDS, PASSES): which roofs bench times beside it
    traffic: str = WRITES
    #: what its roof is, as the report says it (harness.bench.roofs times it)
    roof: str = "fastest bare fill of the same bytes (fresh or recycled memory)"
    #: what its roofs' names end in; None: "-<name>" (the 1-D table's kept short names: committed
    #: runs hold them)
    roof_suffix: Optional[str] = None
    #: the batch and heads verify gives one call of a batched workload (harness.core.checks),
    #: and bench's defaults (`bench --batch`, `--heads`)
    verify_batch: int = 1
    verify_heads: int = 1
    bench_batch: int = 1
    bench_heads: int = 1
    #: its place in a report, before larger numbers (then by name)
    order: int = 100
    doc: str = ""

    def __post_init__(self) -> None:
        if self.traffic not in TRAFFIC:
            raise UsageError(f"traffic of workload {self.name!r} must be one of {TRAFFIC}, "
                             f"got {self.traffic!r}")
        for field in ("verify_batch", "verify_heads", "bench_batch", "bench_heads"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"{field} of workload {self.name!r} must be an integer >= 1, "
                                 f"got {value!r}")

    @property
    def roof_ending(self) -> str:
        return f"-{self.name}" if self.roof_suffix is None else self.roof_suffix

    def usual_on(self, device: str) -> tuple[str, ...]:
        return dict(self.usual).get(device, ())

    def arrangement(self, spec: Any, batch: int = 1, heads: int = 1) -> Arrangement:
        if self.arrange is not None:
            return self.arrange(spec, batch, heads)
        shape = self.shape(spec, batch, heads)
        return Arrangement(tuple(shape[1:] for _ in self.parts))

    def why_not(self, spec: Any, forms: Any) -> Optional[str]:
        """None when an implementation declaring `forms` takes the case `spec`, else why not."""
        return self.accepts(spec, forms) if self.accepts is not None else None

    def arguments(self, spec: Any, batch: int = 1, heads: int = 1) -> tuple:
        return self.inputs(spec, batch, heads) if self.inputs is not None else ()

    def elements(self, spec: Any, batch: int = 1, heads: int = 1) -> int:
        """Elements one call writes (every part's, as returned)."""
        if self.parts:
            return sum(math.prod(s) for s in self.arrangement(spec, batch, heads).shapes)
        return math.prod(self.shape(spec, batch, heads))

    def expected(self, spec: Any, args: tuple, reference: np.ndarray,
                 tolerance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.expect is None:
            return reference, tolerance
        return self.expect(spec, args, reference, tolerance)


@dataclass(frozen=True)
class Kind:
    """One kind of table and the pieces the verbs use to judge, time and name it."""

    name: str
    spec_type: type
    reference: Callable[[Any], np.ndarray]           # float64 truth for a spec
    tolerance: Callable[[Any], np.ndarray]           # allowed |error| per element, same shape
    cases: Callable[..., Sequence[Any]]              # verify's specs: cases(quick, n_random, seed)
    workloads: tuple[Workload, ...]
    #: named conventions (spec fields by a short name), the first the default: bench times each
    #: implementation in the first it supports, the report recommends within one
    conventions: Mapping[str, Mapping[str, Any]]
    #: (length, width, dtype, convention) -> the spec bench times for a cell of those axes
    bench_spec: Callable[[int, int, str, str], Any]
    #: bench's default axes: (lengths, widths) in full and quick sweeps
    bench_sizes: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    bench_sizes_quick: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    #: bench's default dtypes on the CPU in full and quick sweeps
    bench_dtypes: tuple[str, ...] = ("float32", "float64")
    bench_dtypes_quick: tuple[str, ...] = ("float32",)
    #: what bench's length and width axes are for this kind, for tables and plots
    axes: tuple[str, str] = ("positions", "d_model")
    #: the `exact` contract's allowed |error| (harness.core.contract); None: a pass grades `float32`
    exact: Optional[Callable[[Any], np.ndarray]] = None
    #: what an implementation registered without `supports=` covers (None: any spec of the kind)
    default_supports: Optional[Callable[[Any], Optional[str]]] = None
    #: optional slots the verbs that read a kind more closely look in, named as modules (a verb is
    #: a layer above: it imports them, a kind never does). `reader`: identify's reader, a module
    #: with `read(stored, by_name, timesteps, forced)` and `CLAIMS`, the array names it takes
    #: (harness/identify/readers/<kind>.py); "": identify cannot read this kind.
    reader: str = ""
    #: `studies`: modules whose `STUDIES` measure this kind's precision
    #: (harness/verbs/precision/<kind>.py); (): it has none
    studies: tuple[str, ...] = ()
    doc: str = ""

    @property
    def workload_names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.workloads)

    @property
    def order(self) -> int:
        """Its place among kinds: its first workload's in reports."""
        return min((w.order for w in self.workloads), default=100)

    @property
    def first_convention(self) -> str:
        """The default convention: bench times each implementation in the first it supports,
        the report recommends within it."""
        return next(iter(self.conventions))

    def workload(self, name: str) -> Workload:
        for work in self.workloads:
            if work.name == name:
                return work
        raise UsageError(f"workload must be one of {self.workload_names} for kind {self.name!r}, "
                         f"got {name!r}")


KINDS: dict[str, Kind] = {}


def add(kind: Kind) -> Kind:
    """Register a kind (a name already taken must be the same kind; workload names are unique)."""
    old = KINDS.get(kind.name)
    if old is not None and old != kind:
        raise UsageError(f"kind {kind.name!r} is already defined")
    for other in KINDS.values():
        shared = set(other.workload_names) & set(kind.workload_names)
        if other.name != kind.name and shared:
            raise UsageError(f"workload names {sorted(shared)} of kind {kind.name!r} are taken "
                             f"by kind {other.name!r}")
    KINDS[kind.name] = kind
    return kind


def named(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise UsageError(f"kind must be one of {sorted(KINDS)}, got {name!r}") from None


def of(spec: Any) -> Kind:
    """The kind whose spec type `spec` is."""
    for kind in KINDS.values():
        if isinstance(spec, kind.spec_type):
            return kind
    raise TypeError(f"{type(spec).__name__} is the spec of no known kind "
                    f"(known: {', '.join(sorted(KINDS))})")


def of_workload(workload: str) -> Kind:
    """The kind a workload name belongs to."""
    for kind in KINDS.values():
        if workload in kind.workload_names:
            return kind
    raise UsageError(f"workload must be one of {all_workloads()}, got {workload!r}")


def workload(name: str) -> Workload:
    """The workload of that name, whichever kind it belongs to."""
    return of_workload(name).workload(name)


def all_workloads() -> tuple[str, ...]:
    return tuple(name for kind in KINDS.values() for name in kind.workload_names)


def reference(spec: Any) -> np.ndarray:
    """The float64 reference of any kind's spec (the public `harness.reference`); a rotary
    cache's is cos and sin stacked, `cos, sin = reference(spec)`."""
    return of(spec).reference(spec)


def tolerance(spec: Any) -> np.ndarray:
    """The per-element tolerance of any kind's spec (the public `harness.tolerance`)."""
    return of(spec).tolerance(spec)


def spec_dict(spec: Any) -> dict[str, Any]:
    """The spec's fields with its kind first: what `identify --json` prints and
    `spec_from_dict` reads back."""
    return {"kind": of(spec).name, **spec.as_dict()}


def spec_from_dict(data: Mapping[str, Any]) -> Any:
    """Rebuild any kind's spec from its fields (`spec_dict`, or `as_dict` with no "kind": the
    kind whose spec has every given field, the 1-D table first). Bad values raise the spec's
    own ValueError naming the field."""
    if not isinstance(data, Mapping):
        raise TypeError(f"spec_from_dict takes a mapping of spec fields, got {type(data).__name__}")
    fields = dict(data)
    name = fields.pop("kind", None)
    if name is not None:
        kind = named(name)
    else:
        fitting = [k for k in KINDS.values() if set(fields) <= _field_names(k.spec_type)]
        if not fitting:
            raise UsageError(f"no kind's spec has the fields {sorted(fields)}; add \"kind\" "
                             f"(one of {sorted(KINDS)})")
        kind = fitting[0]
    unknown = set(fields) - _field_names(kind.spec_type)
    if unknown:
        raise UsageError(f"{kind.spec_type.__name__} has no field(s) {sorted(unknown)}; "
                         f"its fields are {sorted(_field_names(kind.spec_type))}")
    from_dict = getattr(kind.spec_type, "from_dict", None)
    return from_dict(fields) if from_dict is not None else kind.spec_type(**fields)


def _field_names(spec_type: type) -> set[str]:
    return set(getattr(spec_type, "__dataclass_fields__", {}))


def _register_builtin_kinds() -> None:
    """Import every package in this one (the 1-D table first): each registers its kind, so a
    new kind is one new folder here and no edit elsewhere. Plain modules here hold what every
    kind shares."""
    import importlib
    import pkgutil

    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))
    for name in sorted(names, key=lambda n: n != "table"):
        importlib.import_module(f"{__name__}.{name}")


#: Modules (os.pathsep-separated) whose import adds kinds from outside this package. A kind is
#: trusted code like the references here, so the judge's process imports them too, where it
#: never imports an implementation: keep a kind's module apart from its implementations.
KINDS_ENV = "PE_HARNESS_KINDS"


def _register_named_kinds() -> None:
    """Import the modules $PE_HARNESS_KINDS names; one that fails is a ValueError naming it."""
    import importlib
    import os

    for target in filter(None, (t.strip() for t in os.environ.get(KINDS_ENV, "").split(os.pathsep))):
        try:
            importlib.import_module(target)
        except Exception as exc:
            raise UsageError(f"${KINDS_ENV} names {target!r}, which failed to import: "
                             f"{type(exc).__name__}: {exc}") from exc


_register_builtin_kinds()
_register_named_kinds()
