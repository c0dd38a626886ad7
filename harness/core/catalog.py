"""What implementations exist, learned from a child process, so that the judge never imports one.

`verify` judges in a process that never imports a plugin or a built-in
implementation (a plugin that patches numpy.sin at import would otherwise
rewrite the reference). It still needs to know what there is: `entries`
loads the plugins in a child (`python -c 'harness.core.catalog.child()'`,
its own session, tied to the parent by harness.util.lifeline) and reads back
each implementation's identity as plain data. A plugin that fails to import
is a `PluginError` naming it; one that ends its process at import
(`sys.exit`, `os._exit`) is one too, named by the last plugin the child
announced, so a verb never "succeeds" having run nothing.

A verb that plans (bench) also needs what each implementation's own code says:
whether it runs here and which specs it supports. `entries(targets, questions)`
has the child ask each implementation's `supports` about every question of its
kind (and `unavailable_reason`), each under a deadline, and send the answers
back as strings: the `Entry` then answers `supports(spec)` for those specs
from plain data, so the planning process never runs the judged's code.
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
import time
import functools
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

from harness import backends
from harness.backends.host import resident_peak
from harness.core import isolate, kinds, plugins, wire
from harness.util import lifeline, reaper

START_S = 180.0
#: A verb's JUDGE_APART saying: keep plugins out of this process, but the built-ins (the
#: project's own code) may load here when there is no plugin (identify: it needs them only to
#: name libraries, and a child per call would double its time).
PLUGINS_APART = "plugins"
#: Seconds one `supports` or availability question may take in the child; after a timeout the
#: implementation's remaining questions are not asked (one hang costs one timeout).
ASK_S = 30.0


@dataclass(frozen=True)
class Entry:
    """An implementation's identity, without its code: what a verb selects and reports by."""

    name: str
    backend: str
    device: str
    kind: str
    workload: str
    origin: str = ""
    #: a correctness reference (harness.core.selection leaves it out of sweeps)
    reference: bool = False
    #: why it cannot run here, as its process found (None: it can, or nobody asked)
    unavailable: Optional[str] = None
    #: (spec, its `supports` answer) for every question its process was asked
    answers: tuple[tuple[Any, Optional[str]], ...] = ()

    def unavailable_reason(self) -> Optional[str]:
        return self.unavailable

    @property
    def available(self) -> bool:
        return self.unavailable is None

    def supports(self, spec: Any) -> Optional[str]:
        """Its own `supports(spec)`, as its process answered; a spec nobody asked about is the
        harness's own mistake (KeyError)."""
        try:
            return self._answered[spec]
        except KeyError:
            raise KeyError(f"{self.name}: supports({spec!r}) was not asked of its process "
                           "(harness.core.catalog.entries' questions)") from None

    @functools.cached_property
    def _answered(self) -> dict[Any, Optional[str]]:
        return dict(self.answers)


@dataclass(frozen=True)
class BackendFacts:
    """What a planning process needs of a plugin's backend adapter, as plain data."""

    name: str
    jit: bool
    threaded: bool
    capture: bool

    def shadow(self) -> backends.Backend:
        """An adapter with these facts and none of the plugin's code (its worker has that)."""
        return backends.Backend(name=self.name, jit=self.jit, threaded=self.threaded,
                                capture=_captured_in_its_worker if self.capture else None,
                                peak={"cpu": resident_peak})


def _captured_in_its_worker(call: Any, n: int) -> Any:
    raise RuntimeError("a plugin backend's capture runs only in its worker, which loads it")


def entries(targets: Sequence[str], questions: Sequence[Any] = (),
            availability: bool = True) -> list[Entry]:
    """Every implementation the built-ins, entry points, $PE_HARNESS_PLUGINS and `targets`
    register, in registration order, learned from a child that loads them; with `questions`
    (specs), each also carries its `supports` answer to every question of its kind and, unless
    not `availability`, why it cannot run here."""
    questions = tuple(questions)
    request = (tuple(targets), questions, availability)
    with isolate.started("harness.core.catalog:child", request) as (
            proc, read, _):
        messages = _read_all(read, proc)
    loading = "the built-in implementations"
    for kind, value in messages:
        if kind == "loading":
            loading = f"plugin {value!r}"
        elif kind == "backends":
            for facts in value:
                if isinstance(facts, BackendFacts):
                    backends.describe(facts.shadow())
        elif kind == "entries":
            return [_answered(e, questions) for e in value if isinstance(e, Entry)]
        elif kind == "plugin-error":
            raise plugins.PluginError(str(value))
    raise plugins.PluginError(f"{loading} ended its process at import "
                              f"({isolate.describe_exit(proc.returncode)}); a plugin must "
                              "register implementations, not exit")


def _read_all(fd: int, proc: subprocess.Popen) -> list[tuple[str, Any]]:
    """Every message until the child closes the pipe (or START_S passes)."""
    data, deadline = b"", time.monotonic() + START_S
    while time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], isolate.POLL_S)
        chunk = os.read(fd, 1 << 16) if readable else b""
        if chunk:
            data += chunk
        elif readable or (proc.poll() is not None and not isolate.pending(fd)):
            break
    return wire.split_messages(data)


def _answered(entry: Entry, questions: tuple[Any, ...]) -> Entry:
    """The Entry with its answers (sent as strings in the questions' order) beside their specs;
    the specs never travel back (a kind from $PE_HARNESS_KINDS is no harness dataclass)."""
    if not questions:
        return entry
    said = [a if isinstance(a, str) or a is None else str(a) for a in entry.answers]
    return replace(entry, answers=tuple(zip(questions, said)))


def _ask(impl: Any, questions: tuple[Any, ...], availability: bool
         ) -> tuple[Optional[str], tuple[Any, ...]]:
    """(why it cannot run here, when asked; its answer to each question in order: None, or the
    reason; a question of another kind gets `supports`' own refusal), each under ASK_S."""
    from harness.core.observe import guarded

    unavailable, why = guarded(impl.unavailable_reason, ASK_S) if availability else (None, "")
    if why:
        unavailable = f"availability check: {why}"
    answers: list[Optional[str]] = []
    for spec in questions:
        if answers and answers[-1] is not None and answers[-1].startswith("supports: timeout"):
            answers.append("not asked: an earlier supports() timed out")
            continue
        if kinds.of(spec).name != impl.kind:
            answers.append(f"builds a {impl.kind!r}, not a {kinds.of(spec).name!r}")
            continue
        said, why = guarded(lambda: impl.supports(spec), ASK_S)
        answers.append(f"supports: {why}" if why else None if said is None else str(said))
    return (None if unavailable is None else str(unavailable)), tuple(answers)


def child() -> None:
    """Load the plugins, announcing each, and send every implementation's Entry (with its
    answers to the questions, when there are any)."""
    lifeline.watch()
    reaper.adopt_orphans()
    out = int(os.environ.pop(isolate.RESULTS_ENV))
    targets, questions, availability = pickle.load(sys.stdin.buffer)
    send = wire.sender(out)
    try:
        plugins.load_builtins()
        plugins.load_entry_points()
        for target in [*plugins.env_plugins(), *targets]:
            send("loading", target)
            plugins.load_plugin(target)
        from harness.core.registry import REGISTRY
        send("backends", [BackendFacts(b.name, b.jit, b.threaded, b.capture is not None)
                          for b in map(backends.get, {i.backend for i in REGISTRY.all()})])
        found = []
        for i in REGISTRY.all():
            unavailable, answers = _ask(i, questions, availability) if questions else (None, ())
            found.append(Entry(i.name, i.backend, i.device, i.kind, i.workload, i.origin,
                               bool(i.reference), unavailable, answers))
        send("entries", found)
    except plugins.PluginError as exc:
        send("plugin-error", str(exc))
    isolate.exit_now(0)
