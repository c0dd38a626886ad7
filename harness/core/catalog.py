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
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

from harness.core import isolate, plugins
from harness.util import lifeline, reaper

START_S = 180.0


@dataclass(frozen=True)
class Entry:
    """An implementation's identity, without its code: what a verb selects and reports by."""

    name: str
    backend: str
    device: str
    kind: str
    workload: str
    origin: str = ""


def entries(targets: Sequence[str]) -> list[Entry]:
    """Every implementation the built-ins, entry points, $PE_HARNESS_PLUGINS and `targets`
    register, in registration order, learned from a child that loads them."""
    with isolate.started("harness.core.catalog:child", tuple(targets)) as (proc, read, _):
        messages = _read_all(read, proc)
    loading = "the built-in implementations"
    for kind, value in messages:
        if kind == "loading":
            loading = f"plugin {value!r}"
        elif kind == "entries":
            return [e for e in value if isinstance(e, Entry)]
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
    return isolate.split_messages(data)


def child() -> None:
    """Load the plugins, announcing each, and send every implementation's Entry."""
    lifeline.watch()
    reaper.adopt_orphans()
    out = int(os.environ.pop(isolate.RESULTS_ENV))
    targets: tuple[str, ...] = pickle.load(sys.stdin.buffer)
    send = isolate.sender(out)
    try:
        plugins.load_builtins()
        plugins.load_entry_points()
        for target in [*plugins.env_plugins(), *targets]:
            send("loading", target)
            plugins.load_plugin(target)
        from harness.core.registry import REGISTRY
        send("entries", [Entry(i.name, i.backend, i.device, i.kind, i.workload, i.origin)
                         for i in REGISTRY.all()])
    except plugins.PluginError as exc:
        send("plugin-error", str(exc))
    isolate.exit_now(0)
