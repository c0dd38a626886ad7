"""What the harness needs to know about one array backend, in one frozen value.

Every backend-specific decision of the harness goes through a `Backend`: what
must be importable, which distributions to record in env.json, how to pin its
threads, how to wait for a result dispatched asynchronously, whether an object is one of
its arrays and how to bring it to NumPy,
how to poison a returned buffer, how to measure peak memory, whether it can see
a CUDA device, and how to capture a call into a CUDA graph. Adding a backend is
one module in this package that builds one of these, plus its implementations.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np

Call = Callable[[], Any]


#: Peak memory of one call: `meter(call) -> (bytes, method)`; the method is recorded per row.
PeakMeter = Callable[[Call], "tuple[int, str]"]


@dataclass(frozen=True)
class Backend:
    """One backend's adapter. Every callable field is optional: None means "nothing to do"."""

    name: str
    modules: tuple[str, ...] = ()                      # importable for it to be available
    distributions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # env.json label -> dists
    array_modules: tuple[str, ...] = ()                # type(x).__module__ prefixes of its arrays
    to_numpy: Optional[Callable[[Any], np.ndarray]] = None
    poison: Optional[Callable[[Any], bool]] = None     # fill with NaN in place; False if immutable
    pin_threads: Optional[Callable[[int], str]] = None # set its pools, describe what holds
    threaded: bool = True                              # worth timing at more than one thread
    #: its pools resize while it runs (pin_threads may be called again between cells), so one
    #: worker serves every thread count (one start-up, one compile per kernel, not one per count)
    runtime_threads: bool = False
    peak: Mapping[str, PeakMeter] = field(default_factory=dict)   # device -> meter
    cuda: Optional[Callable[[], Optional[str]]] = None # None when it sees a CUDA device, else why
    #: capture(call, n): one CUDA graph of n back-to-back calls, and a replay of it
    capture: Optional[Callable[[Call, int], Call]] = None
    install: str = ""                                  # how to get it, for "not installed"
    prepare: Optional[Callable[[], None]] = None       # once per process, before its impls run
    #: block until a result returned before it was computed (asynchronous dispatch) is ready:
    #: bench times a call up to this, on every device
    wait: Optional[Callable[[Any], Any]] = None
    #: compiles on first use, with caches shared by all its implementations (Numba, XLA,
    #: Triton, NVRTC): bench gives each implementation x dtype a worker process of its own,
    #: so that its first call is cold
    jit: bool = False
    #: inputs(array, dtype, device): a NumPy input (a forward's x, an apply's q, k, positions) as
    #: a fresh array of this backend on `device`, floats in the spec's `dtype`, made by the
    #: harness outside any timed region (harness.core.handover); None: a NumPy copy
    inputs: Optional[Callable[[np.ndarray, str, str], Any]] = None
    #: negate a float array in place (bench changes a call-time implementation's inputs where
    #: they lie, so a cache keyed on their identity shows); False when it is immutable
    negate: Optional[Callable[[Any], bool]] = None

    def missing(self) -> Optional[str]:
        """None when its modules import here, else which one is missing (without importing)."""
        for module in self.modules:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed ({self.install or 'pip install ' + module})"
        return None

    def owns(self, x: Any) -> bool:
        """`x` is one of this backend's arrays (judged by its type's module: no import)."""
        module = type(x).__module__
        return any(module == m or module.startswith(m + ".") for m in self.array_modules)

    def device_problem(self, device: str) -> Optional[str]:
        """None when this backend can run on `device` here, else why not."""
        if device == "cpu":
            return None
        if device != "cuda" or self.cuda is None:
            return f"backend {self.name} has no {device} device support"
        return self.cuda()
