"""Is a cell slower than in the base run? A rank test on the raw rounds and a ratio, as asv does.

Two medians alone fail the same code: on a shared machine a median moves by
10% between runs minutes apart. asv calls two results different only when a
Mann-Whitney U test on their samples says so *and* their ratio passes its
factor; pyperf runs a t-test on its values. Here each cell keeps up to 64 of
its timed rounds in the journal (`samples_s`), and a cell is slower when

    median_new / median_base > bar   and   U-test p (new > base) < ALPHA
    and at least half its series (its implementation's sizes) reach the bar

where bar = max(1 + pct / 100, what the noise between the runs explains:
harness.report.noise), and a cell with too few rounds for p to reach ALPHA needs
every new round above every base round (p at its floor). The series rule is there
because single cells of unchanged code move alone: beside one busy core at load 4,
six of 60 one-thread cells moved 1.3-1.56x while their group's spread was 0.02, each
alone in its series; a slowdown of the code moves its series. Its price: a slowdown
at fewer than half of an implementation's sizes is not called. A run recorded
before raw rounds were kept falls back to the old rule: the rise must exceed the
two IQRs added.

Which cells of the new run are left out: those flagged `load` (other processes took
the cores its threads needed: a 2-thread cell beside one busy core of two waits at every
barrier, 10-40x its time) or `clock` (its worker's timer disagreed with the wall clock:
its rounds are not measurements). A cell timed beside other processes' load while its own
cores were free is judged, but only beyond the noise between the two runs
(harness.report.noise): two `--quick` runs of the same code under one busy core timed such
cells up to 1.58x apart, rank tests agreeing, and a gate on medians alone failed 37 cells
of unchanged code. Where a group has too few cells to measure that noise, a cell timed
while others kept more than BUSY_FOR_GATE of a core busy is not judged; nor is any cell of
a device and thread count whose cells the new run timed, in the median, beside more busy
cores than their threads left free (by noise.STORM_EXCESS): under load 4-5 the one-thread cells
left unflagged moved up to 3.6x with the same code (timed in a lull of a load that came
and went, or not), where one busy core alone moved them up to 1.56x. Load only ever
makes a time longer, so a base run's flags cannot make the same code look slower (they
can hide a slowdown, never invent one) and do not leave a cell out; nor does a `threads`
flag, which the change may have caused (an all-core path that became 5x slower is
exactly that).

Two runs measured on different machines (CPU model, cores, GPU) are refused by
the gate; different thread counts are named (cells pair by thread count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.runs import flags as flag_rules

#: Significance of the one-sided rank test.
ALPHA = 0.01
#: env.json fields that must agree for a speed verdict to be about the code.
SAME_MACHINE = ("cpu_model", "cores_logical", "gpu")
TEST = "Mann-Whitney U on the raw rounds"
FALLBACK = "medians and IQRs (no raw rounds recorded)"
UNMEASURED = "not judged: timed under load, too few cells to measure the noise between the runs"
STORM = ("not judged: the new run timed its thread count beside more busy cores than its "
         "threads left free (harness.report.noise.STORM_EXCESS)")


@dataclass(frozen=True)
class Verdict:
    """Whether one cell is slower, with the evidence: the test used and its p (NaN without)."""

    slower: bool
    p_value: float
    test: str


def judge(base_s: float, new_s: float, spread_s: float, base_rounds: Sequence[float],
          new_rounds: Sequence[float], pct: float, allowed: float = 1.0,
          series: float = math.nan) -> Verdict:
    """The gate's decision for one cell timed ok in both runs: slower by more than `pct` % and
    than the `allowed` ratio the noise between the runs explains, and so is its `series` (the
    ratio half of its implementation's sizes reach, when known), the rank test agreeing."""
    bar = max(1 + pct / 100.0, allowed)
    rises = new_s > bar * base_s and not series <= bar
    if len(base_rounds) < 2 or len(new_rounds) < 2:
        return Verdict(rises and new_s - base_s > spread_s, math.nan, FALLBACK)
    p = p_slower(base_rounds, new_rounds)
    return Verdict(rises and p <= alpha(len(base_rounds), len(new_rounds)), p, TEST)


def p_slower(base_rounds: Sequence[float], new_rounds: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value that the new rounds are slower than the base's."""
    from scipy.stats import mannwhitneyu

    new, base = np.asarray(new_rounds, float), np.asarray(base_rounds, float)
    if np.ptp(np.concatenate([new, base])) == 0:
        return 1.0                                  # all equal: no evidence either way
    return float(mannwhitneyu(new, base, alternative="greater").pvalue)


def alpha(n_base: int, n_new: int) -> float:
    """ALPHA, or the smallest p the exact test can give with this few rounds (every new round
    slower than every base round), when that is larger."""
    return max(ALPHA, 1.0 / math.comb(n_base + n_new, n_new))


#: Cores other processes kept busy while a cell of the new run was timed beyond which the gate
#: does not judge it where the noise between the runs could not be measured (see above).
BUSY_FOR_GATE = 0.5


def left_out(new: pd.DataFrame) -> pd.Series:
    """Rows of the new run the gate does not judge: flagged for load or for their clock."""
    column = new["flags"] if "flags" in new.columns else flag_rules.flags(new)
    return column.fillna("").astype(str).str.contains(r"(?:^|; )(?:load|clock):", regex=True)


def machine_differences(new_env: Mapping[str, Any], base_env: Mapping[str, Any]) -> list[str]:
    """'cpu_model: A vs B' for each SAME_MACHINE field both runs recorded and that differs."""
    out = []
    for name in SAME_MACHINE:
        a, b = new_env.get(name), base_env.get(name)
        if name in new_env and name in base_env and a != b:
            out.append(f"{name}: {a} (new) vs {b} (base)")
    return out


def thread_difference(new: pd.DataFrame, base: pd.DataFrame) -> str:
    """'' when both runs timed the same thread counts, else what each timed."""
    a, b = (sorted(set(pd.to_numeric(f["threads"], errors="coerce").dropna().astype(int)))
            for f in (new, base))
    if a == b:
        return ""
    return (f"thread counts differ: new {', '.join(map(str, a))}, base {', '.join(map(str, b))}"
            "; only cells at the same thread count are compared")
