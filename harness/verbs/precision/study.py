"""One precision study: which module measures which probes, and how it is titled and read.

Each kind's study module (harness/verbs/precision/<kind>.py, named by `Kind.studies`) declares
its own `STUDIES`; harness.verbs.precision.studies gathers them from the kinds registry.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.verbs.precision.verdicts import Axis


@dataclass(frozen=True)
class Study:
    kind: str
    name: str                       # the `study` column
    module: str                     # its `measure(probes)` makes the points
    probes: tuple[float, ...]
    probes_quick: tuple[float, ...]
    title: str
    axis: Axis
    shown: tuple[float, ...]        # the probes the summary table shows
    note: str
    choose_by: str = "dtype"        # verdicts.choices: one choice per dtype, or per "config"
