"""What makes two rows the same cell: one frozen `CellKey`, from which every other copy derives.

The journal's `key` (and so --resume), a cell's 1-thread sibling (the flags), the roof it is
set against (bench.csv), the report's cell and the pairing of `report --compare` all read the
fields named here, so an axis (heads was one that some copies lacked) is added once. The kind
of table is not a field: workload names are unique across kinds, so the workload implies it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping


@dataclass(frozen=True)
class CellKey:
    """One timed cell of a run: the same key in another run is the same measurement."""

    impl: str
    workload: str
    device: str
    length: int
    d_model: int
    dtype: str
    threads: int
    batch: int = 1
    heads: int = 1          # attention heads of a rotary apply's q and k
    mode: str = ""          # how a device cell is timed (harness.bench.modes); "" on the CPU

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "CellKey":
        """The key of a journal or bench.csv row (the fields it lacks take their defaults)."""
        return cls(**{name: row[name] for name in FIELDS if name in row})

    def text(self, batched: bool) -> str:
        """The journal's `key` string (stable: --resume matches old journals by it);
        `batched`: whether the workload sweeps batch (and heads)."""
        batch = ""
        if batched:
            batch = f"-b{self.batch}" + (f"h{self.heads}" if self.heads != 1 else "")
        mode = f":{self.mode}" if self.mode else ""
        return (f"{self.impl}:{self.workload}:{self.device}:{self.length}x{self.d_model}{batch}"
                f":{self.dtype}:{self.threads}t{mode}")


#: The key's fields, as the columns of a row.
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CellKey))
#: The same cell at another thread count: an N-thread cell's 1-thread sibling.
SIBLING: tuple[str, ...] = tuple(f for f in FIELDS if f != "threads")
#: The output a cell writes, whoever writes it: the cells a roof stands beside.
OUTPUT: tuple[str, ...] = tuple(f for f in FIELDS if f != "impl")
#: One task across implementations and devices (speedups over the CPU baseline).
TASK: tuple[str, ...] = tuple(f for f in FIELDS if f not in ("impl", "device", "mode"))
