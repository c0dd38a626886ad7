"""The plugin registry: what implementations exist, what they support, whether they run here.

An implementation is a factory `build(spec) -> callable`. The factory does the
untimed setup (imports, JIT compilation, device transfer); the callable it
returns is what verify checks and bench times. For a table it takes no
argument; for a workload with inputs it takes them at every call (a `forward`'s
`fn(x) -> x + PE`, an apply's `fn(q, k, positions)`), handed over by the harness
in the backend's arrays (harness.core.handover). A factory that takes the inputs
after the spec and returns a zero-argument callable is the deprecated older form.

Backends are optional: a module that registers a torch implementation must
import torch inside its factory, so that a machine without torch lists the
implementation as unavailable with a reason instead of failing to import.
What a backend needs (modules, a CUDA device for device="cuda") comes from
its adapter in harness.backends.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Optional

from harness import backends
from harness.core import handover, kinds
from harness.core.kinds.table.supports import Supports
from harness.util.exitcodes import UsageError

SupportsFn = Callable[[Any], Optional[str]]
Factory = Callable[..., Callable[..., Any]]


@dataclass(frozen=True)
class Implementation:
    """One registered implementation and everything the harness needs to know about it."""

    name: str
    backend: str
    device: str
    build: Factory
    supports_fn: SupportsFn
    workload: str = "table"
    kind: str = "table"                     # which kind of table it builds (harness.core.kinds)
    requires: tuple[str, ...] = ()          # modules beyond what its backend needs
    #: the distribution whose own code runs (e.g. "transformers"); None for the project's own
    library: Optional[str] = None
    #: a correctness reference (a library's convention re-derived): a sweep times it only
    #: when --only names it (harness.core.selection)
    reference: bool = False
    check: Optional[Callable[[], Optional[str]]] = None
    origin: str = ""
    doc: str = ""
    #: the forms of its workload it takes (a rotary apply's `ApplyForms`); None: the workload's
    #: default forms (`forms_declared`)
    forms: Any = None

    @property
    def forms_declared(self) -> Any:
        """What it declared, or its workload's default declaration (None: one form only)."""
        if self.forms is not None:
            return self.forms
        form_type = kinds.named(self.kind).workload(self.workload).forms
        return form_type() if form_type is not None else None

    @property
    def inputs_at_call(self) -> bool:
        """Its callable takes its workload's inputs at every call (the factory takes the spec
        only); False for a workload without inputs, and for the deprecated build-time form."""
        work = kinds.named(self.kind).workload(self.workload)
        return work.inputs is not None and handover.at_call(self.build)

    def supports(self, spec: Any) -> Optional[str]:
        """None when `spec` is supported, else the reason it is not (a spec of another kind
        never is, nor a case in a form it did not declare)."""
        if not isinstance(spec, kinds.named(self.kind).spec_type):
            return f"builds a {self.kind!r}, not a {kinds.of(spec).name!r}"
        why = kinds.named(self.kind).workload(self.workload).why_not(spec, self.forms_declared)
        return why or self.supports_fn(spec)

    @property
    def conventions(self) -> str:
        describe = getattr(self.supports_fn, "describe", None)
        return describe() if describe else "custom (see its supports())"

    def unavailable_reason(self) -> Optional[str]:
        """None when it can run here, else why not (missing module, no GPU, ...)."""
        return self._probed

    @functools.cached_property
    def _probed(self) -> Optional[str]:
        """Probed once: a GPU check imports torch, a module check walks sys.path."""
        return self._probe()

    @property
    def library_version(self) -> Optional[str]:
        """The installed version of `library` (None for the project's own or when absent)."""
        if self.library is None:
            return None
        try:
            return importlib.metadata.version(self.library)
        except importlib.metadata.PackageNotFoundError:
            return None

    @property
    def available(self) -> bool:
        return self.unavailable_reason() is None

    def _probe(self) -> Optional[str]:
        backend = backends.get(self.backend)
        missing = backend.missing()
        if missing:
            return missing
        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed"
        try:
            device = backend.device_problem(self.device)
        except Exception as exc:  # a broken backend is a reason, not a crash
            return f"{self.device} check failed: {type(exc).__name__}: {exc}"
        if device:
            return device
        if self.check is not None:
            try:
                return self.check()
            except Exception as exc:  # a broken backend is a reason, not a crash
                return f"availability check failed: {type(exc).__name__}: {exc}"
        return None


class Registry:
    """Name -> Implementation. Re-registering the same name from the same module replaces it."""

    def __init__(self) -> None:
        self._impls: dict[str, Implementation] = {}

    def add(self, impl: Implementation) -> Implementation:
        old = self._impls.get(impl.name)
        if old is not None and old.origin != impl.origin:
            raise UsageError(
                f"implementation name {impl.name!r} is already registered by {old.origin}; "
                "choose another name"
            )
        work = kinds.named(impl.kind).workload(impl.workload)   # both must exist: ValueError if not
        if impl.forms is not None and (work.forms is None or not isinstance(impl.forms, work.forms)):
            want = f"{work.forms.__name__}(...)" if work.forms is not None else "None (it has one form)"
            raise UsageError(f"forms of {impl.name!r} must be {want} for workload {impl.workload!r}, "
                             f"got {impl.forms!r}")
        self._impls[impl.name] = impl
        return impl

    def register(
        self,
        *,
        name: str,
        backend: str,
        device: str = "cpu",
        supports: SupportsFn | Supports | None = None,
        workload: str = "table",
        kind: Optional[str] = None,
        requires: Iterable[str] | None = None,
        check: Optional[Callable[[], Optional[str]]] = None,
        library: Optional[str] = None,
        reference: bool = False,
        cuda: Optional[str] = None,
        forms: Any = None,
    ) -> Callable[[Factory], Factory]:
        """Decorator for a factory; returns the factory unchanged so it stays testable. The kind
        follows from the workload (names are unique across kinds) unless given. `cuda` names a
        twin on the GPU: the same factory called with `device="cuda"` (it must take `device`),
        registered once more under that name with everything else alike. `forms` declares the
        forms of the workload it takes beyond the default (a rotary apply's `ApplyForms`)."""
        kind = kind or kinds.of_workload(workload).name

        def decorator(build: Factory) -> Factory:
            impl = self.add(Implementation(
                name=name, backend=backend, device=device, build=build,
                supports_fn=supports if supports is not None else _default_supports(kind),
                workload=workload, kind=kind,
                requires=tuple(requires or ()), library=library, reference=reference,
                check=check, origin=getattr(build, "__module__", "?"),
                doc=(build.__doc__ or "").strip().split("\n")[0], forms=forms,
            ))
            if cuda is not None:
                self.add(replace(impl, name=cuda, device="cuda", doc=f"on the GPU: {impl.doc}",
                                 build=functools.partial(build, device="cuda")))
            return build

        return decorator

    def all(self) -> list[Implementation]:
        return sorted(self._impls.values(), key=lambda i: (i.workload, i.backend, i.name))

    def get(self, name: str) -> Implementation:
        try:
            return self._impls[name]
        except KeyError:
            raise KeyError(f"no implementation named {name!r}; see `python -m harness list`") from None

    def remove(self, name: str) -> None:
        self._impls.pop(name, None)


def _default_supports(kind: str) -> SupportsFn:
    """Without `supports=`: what the kind says (the 1-D table's default conventions), else any
    spec of the kind."""
    return kinds.named(kind).default_supports or _any_spec


def _any_spec(spec: Any) -> Optional[str]:
    return None


REGISTRY = Registry()
register = REGISTRY.register
