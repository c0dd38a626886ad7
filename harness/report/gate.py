"""Is a cell slower than in the base run? A ratio beyond the runs' own noise, a rank test on the
raw rounds (as asv does), and the implementation's other cells agreeing.

Two medians alone fail the same code: on a shared machine a median moves by 10-20%
between runs minutes apart, and a rank test on each run's rounds agrees with every such
shift (it sees only the rounds of one run's moment). asv calls two results different only
when a Mann-Whitney U test on their samples says so *and* their ratio passes its factor.
Here each cell keeps up to 64 of its timed rounds in the journal (`samples_s`), and a cell
is slower when

    new / base > bar = max(1 + pct / 100, what the noise explains)   (harness.report.noise)
    and the one-sided U test gives p (new > base) < alpha(rounds)
    and at least half of its implementation's other judged cells of that dtype beat
    their own bars too (compare.decide)

A cell that beats its bar alone is a *lone rise*, named and not failed: beside one busy
core at load 4, six of 60 one-thread cells of unchanged code moved 1.3-1.56x while their
group's spread was 0.02, each alone; a slowdown of the code moves its implementation's
cells together. The price: a slowdown at fewer than half of an implementation's sizes, or
of an implementation timed at one size alone, is named but does not fail. A run recorded
before raw rounds were kept falls back to the old rule for the test: the rise must exceed
the two IQRs added.

Not judged: cells the new run flagged `load` (other processes took the cores its threads
needed: a 2-thread cell beside one busy core of two waits at every barrier, 10-40x its
time) or `clock` (its worker's timer disagreed with the wall clock); every CPU cell of a
count of cores needed (its threads, or fewer where fewer ran: harness.runs.flags.needed)
whose median cell the new run timed beside more busy cores than it left free, by more
than noise.STORM_EXCESS (under load 4-5 one-thread cells left
unflagged moved up to 3.6x with the same code); and cells whose group has too few other
cells to measure the noise. Load only ever makes a time longer, so a base run's flags
cannot make the same code look slower (they can hide a slowdown, never invent one) and
do not leave a cell out; nor does a `threads` flag, which the change may have caused (an
all-core path that became 5x slower is exactly that).

Two runs measured on different machines (CPU model, cores, GPU) are refused by the gate;
different thread counts are named (cells pair by thread count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.report import noise
from harness.runs import flags as flag_rules

#: Significance of the one-sided rank test.
ALPHA = 0.01
#: env.json fields that must agree for a speed verdict to be about the code.
SAME_MACHINE = ("cpu_model", "cores_logical", "gpu")
TEST = "Mann-Whitney U on the raw rounds"
FALLBACK = "medians and IQRs (no raw rounds recorded)"
UNMEASURED = ("too few other cells at its thread count and size regime to measure the noise "
              f"between the runs (fewer than {noise.MIN_CELLS})")
STORM = ("timed under load: the new run's median cell needing as many cores had "
         f"{noise.STORM_EXCESS:g}+ more cores busy with other processes than it left free")


@dataclass(frozen=True)
class Verdict:
    """Whether one cell is slower, with the evidence: the test used and its p (NaN without)."""

    slower: bool
    p_value: float
    test: str


def judge(base_s: float, new_s: float, spread_s: float, base_rounds: Sequence[float],
          new_rounds: Sequence[float], pct: float, allowed: float = 1.0) -> Verdict:
    """Whether one cell timed ok in both runs beats its bar: slower by more than `pct` % and
    than the `allowed` ratio the noise between the runs explains, the rank test agreeing."""
    rises = new_s > max(1 + pct / 100.0, allowed) * base_s
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
