"""Which implementations produce the table the reader asked for: the report's convention filter.

A recommendation is only useful if the recommended implementation builds the
reader's table: the fastest concat table is no answer to someone loading a
checkpoint trained on interleaved columns. An implementation is in a convention
(in one dtype) when verify passed it on a case of that convention's layout,
frequency schedule, offset and sin/cos order; its time is the one bench took,
which may have been in another convention (bench times the first one each
implementation supports), and the report names that convention when it differs.
The default is the paper's: interleaved sin/cos, freq_shift 0, offset 0.

Another kind of table (a rotary cache, a grid, a timestep embedding) is recommended within its
kind's first named convention (harness.core.kinds: neox's rotate_half for rotary): the rows
bench timed in it whose implementation verify passed on that kind in the row's dtype.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pandas as pd

from harness.core import kinds
# The named conventions a bench cell is timed in; the report recommends within one of them.
from harness.core.kinds.table.conventions import CONVENTIONS
from harness.util.exitcodes import UsageError

PAPER = "paper"
#: The kind this filter reads field by field: --convention names one of the 1-D table's
#: CONVENTIONS, matched against its verify rows' own fields; every other kind is recommended
#: in its kind's first convention (`first_of_kind`, `_others_within`).
ONE_D = "table"
#: The Spec fields that make two tables of one shape different tables (base and scale are
#: checked separately: a convention is defined at the default base and scale).
FIELDS: Mapping[str, Any] = {"layout": "interleaved", "freq_shift": 0, "offset": 0,
                             "cos_first": False}


def names() -> tuple[str, ...]:
    return tuple(CONVENTIONS)


def fields(name: str) -> dict[str, Any]:
    """The Spec fields of convention `name` (every key of FIELDS); ValueError when unknown."""
    if name not in CONVENTIONS:
        raise UsageError(f"unknown convention {name!r}; choose one of {', '.join(CONVENTIONS)}")
    return {**FIELDS, **{k: v for k, v in CONVENTIONS[name].items() if k in FIELDS}}


def describe(name: str) -> str:
    """'paper (interleaved, freq_shift 0, offset 0, sin first)'."""
    f = fields(name)
    return (f"{name} ({f['layout']}, freq_shift {f['freq_shift']:g}, offset {f['offset']}, "
            f"{'cos' if f['cos_first'] else 'sin'} first)")


def first_of_kind(workload: str) -> str:
    """The convention another kind's workload is recommended in ('' for the 1-D table's)."""
    try:
        kind = kinds.of_workload(workload)
    except ValueError:
        return ""
    return "" if kind.name == ONE_D else kind.first_convention   # the 1-D table's: --convention


def spelled_out(workload: str, name: str) -> str:
    """A kind's convention name with the spec fields it sets, for a reader who does not know
    it: 'adm (freq_shift 0.0, cos_first True)'; the name alone when no kind defines it."""
    try:
        fields = kinds.of_workload(workload).conventions.get(name)
    except ValueError:
        fields = None
    if not fields:
        return name
    return f"{name} (" + ", ".join(f"{k} {v}" for k, v in fields.items()) + ")"


def cases(verify: Optional[pd.DataFrame], name: str, offsets: bool = False) -> pd.DataFrame:
    """Verify rows of convention `name` at the default base and scale, even widths only.

    `offsets`: any offset (a case starting at p = 1,000,000 is the same table read further
    out, what accuracy far out is about); otherwise exactly the convention's offset.
    """
    if verify is None:
        return pd.DataFrame()
    f = fields(name)
    verify = verify[verify["kind"] == ONE_D] if "kind" in verify else verify   # CONVENTIONS are its
    if verify.empty or any(f not in verify for f in (*FIELDS, "base", "scale", "d_model")):
        return verify.iloc[0:0]          # no 1-D table was verified in this run
    keep = ((verify["layout"] == f["layout"]) & (verify["freq_shift"].astype(float) == f["freq_shift"])
            & (verify["cos_first"].map(_truthy) == f["cos_first"])
            & (verify["base"].astype(float) == 10000.0) & (verify["scale"].astype(float) == 1.0)
            & (verify["d_model"].astype(int) % 2 == 0))
    if not offsets:
        keep &= verify["offset"].astype(int) == f["offset"]
    return verify[keep]


def producers(verify: Optional[pd.DataFrame], name: str) -> set[tuple[str, str]]:
    """(impl, dtype) pairs verify passed on at least one case of convention `name`."""
    rows = cases(verify, name)
    rows = rows[rows["status"] == "pass"] if len(rows) else rows
    return set(zip(rows["impl"], rows["dtype"])) if len(rows) else set()


def within(bench: pd.DataFrame, verify: Optional[pd.DataFrame], name: str) -> pd.DataFrame:
    """The rows of `bench` whose implementation produces convention `name` in the row's dtype.

    Roofs stay (every ratio needs them). Without verify.csv, the rows timed in `name`:
    nothing is recommended then anyway, but the tables still show the convention's rows.
    """
    table = bench["kind"] == ONE_D      # --convention names the 1-D table's; the others: _others_within
    if verify is None:
        keep = bench["convention"].isin([name, ""]) & table
    else:
        made = producers(verify, name)
        keep = pd.Series([(i, d) in made for i, d in zip(bench["impl"], bench["dtype"])],
                         index=bench.index, dtype=bool) & table
    others = _others_within(bench[~table], verify).reindex(bench.index, fill_value=False)
    return bench[keep | others | bench["is_roof"]]


def _others_within(bench: pd.DataFrame, verify: Optional[pd.DataFrame]) -> pd.Series:
    """Rows of the other kinds timed in their kind's first convention (or, where a run timed a
    kind in other conventions only, such as the GPU campaign's `gqa8-bshd` apply, in those) by
    an implementation verify passed on that kind in the row's dtype (no verify: every such row)."""
    read_in: dict[str, set] = {}
    for kind, conventions in bench[bench["status"] != "skip"].groupby("kind")["convention"]:
        first = kinds.KINDS[kind].first_convention if kind in kinds.KINDS else None
        read_in[kind] = {first} if first in set(conventions) else set(conventions)
    keep = pd.Series([c in read_in.get(k, ()) for k, c in zip(bench["kind"], bench["convention"])],
                     index=bench.index, dtype=bool)
    if verify is not None:
        passed = verify[verify["status"] == "pass"]
        made = set(zip(passed["impl"], passed["dtype"]))
        keep &= pd.Series([(i, d) in made for i, d in zip(bench["impl"], bench["dtype"])],
                          index=bench.index, dtype=bool)
    return keep


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")
