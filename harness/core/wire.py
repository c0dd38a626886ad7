"""What crosses between the harness and the processes it judges: framed pickles of plain data.

A child is the judged's process: what it sends must not run code in the parent that reads it,
so `safe_loads` rebuilds plain data only (builtins' containers, NumPy arrays, the harness's own
dataclasses). Each message is a 4-byte length and a pickle (`sender`, `split_messages`);
harness.core.isolate, catalog and apart speak it.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import struct
from typing import Any, Callable

HEADER = struct.Struct(">I")

#: NumPy's pickling machinery for arrays, dtypes and scalars (never an ndarray subclass).
_NUMPY = {("numpy", "ndarray"), ("numpy", "dtype"),
          *((f"numpy.{core}.{module}", name) for core in ("core", "_core")
            for module, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"),
                                 ("numeric", "_frombuffer")))}
_BUILTINS = {"complex", "set", "frozenset", "slice", "range", "bytearray"}


class _PlainUnpickler(pickle.Unpickler):
    """Rebuilds only plain data: builtins' containers, NumPy arrays, and the dataclasses the
    harness's own modules (not harness.impls) define. A child is the judged's process; what it
    sends must not run code here."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _NUMPY or (module == "builtins" and name in _BUILTINS):
            return super().find_class(module, name)
        if module.startswith("harness.") and not module.startswith("harness.impls"):
            found = super().find_class(module, name)
            if isinstance(found, type) and dataclasses.is_dataclass(found):
                return found
        raise pickle.UnpicklingError(f"an isolated process sent {module}.{name}, which is not "
                                     "plain data")


def safe_loads(data: bytes) -> Any:
    """Unpickle what a child sent, allowing plain data only (`_PlainUnpickler`)."""
    return _PlainUnpickler(io.BytesIO(data)).load()


def split_messages(data: bytes) -> list[tuple[str, Any]]:
    """The complete (kind, value) messages in `data`, each read with `safe_loads`."""
    messages = []
    while len(data) >= HEADER.size:
        (size,) = HEADER.unpack_from(data)
        if len(data) < HEADER.size + size:
            break
        messages.append(safe_loads(data[HEADER.size:HEADER.size + size]))
        data = data[HEADER.size + size:]
    return messages


def sender(fd: int) -> Callable[..., None]:
    """In a child: send(kind, value) writes one framed message to the parent."""
    def send(kind: str, value: Any = None) -> None:
        data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
        write_all(fd, HEADER.pack(len(data)) + data)
    return send


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
