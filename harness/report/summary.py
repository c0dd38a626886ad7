"""The short answer: a few lines per workload, first in report.md and last on bench's screen.

Per workload (and device), for each size regime of its first dtype: the pick,
the thread count it was timed with in this run (its own, not the run's
largest), its grade in verify (the `grade` column where verify wrote one:
how closely it matches the float64 reference) and how many times faster than
the usual choice (the seed or plain implementation most code starts from).
The same lines are written to answer.txt, which bench prints at its end, so
the screen and the report say the same thing.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from harness.core.contract import GRADES
from harness.report import fmt, html, markdown
from harness.report.answer import Answer
from harness.report.load import Run
from harness.report.measures import dtype_order
from harness.runs import flags as flag_rules



def grade(verify: Optional[pd.DataFrame], impl: str, dtype: str) -> str:
    """An implementation's worst grade over its verify rows in `dtype` ('' without grades)."""
    if verify is None or "grade" not in verify.columns:
        return ""
    rows = verify[(verify["impl"] == impl) & (verify["dtype"] == dtype)]
    found = [str(g) for g in rows["grade"].dropna() if str(g)]
    if not found:
        return ""
    return max(found, key=lambda g: GRADES.index(g) if g in GRADES else len(GRADES))


def chosen(found: Sequence[Answer]) -> list[Answer]:
    """The answers the short form shows: each workload's and device's first dtype."""
    first: dict[tuple[str, str], str] = {}
    for a in found:
        key = (a.pick.workload, a.pick.device)
        first[key] = dtype_order([a.pick.dtype, *( [first[key]] if key in first else [])])[0]
    # float32 first where timed: the dtype most code uses
    for key in first:
        if any(a.pick.dtype == "float32" and (a.pick.workload, a.pick.device) == key for a in found):
            first[key] = "float32"
    return [a for a in found if a.pick.dtype == first[(a.pick.workload, a.pick.device)]]


def lines(found: Sequence[Answer], verify: Optional[pd.DataFrame],
          missing: Sequence[str] = ()) -> list[str]:
    """One line per workload (and device): each size regime's pick, threads, grade, speed-up;
    then one for the workloads timed with no answer (`missing`: `unanswered`)."""
    by_key: dict[tuple[str, str, str], list[str]] = {}
    for a in chosen(found):
        p = a.pick
        by_key.setdefault((p.workload, p.device, p.dtype), []).append(
            f"{p.regime.name} {p.impl} ({_facts(a, verify)})")
    out = []
    for (workload, device, dtype), parts in by_key.items():
        where = f" on {device}" if device != "cpu" else ""
        out.append(f"{workload} ({dtype}{where}): " + "; ".join(parts))
    if missing:
        out.append(f"no answer for {', '.join(missing)}: every timed cell flagged (report.md)")
    return out


def section(found: Sequence[Answer], verify: Optional[pd.DataFrame]) -> str:
    """report.md's first block: the short answer as a table, with its words explained."""
    if not found:
        return ""
    rows = [{"workload": f"`{a.pick.workload}`", "size": a.pick.regime.name, "dtype": a.pick.dtype,
             "device": a.pick.device, "use": f"**{a.pick.impl}**",
             "threads": a.pick.threads, "grade": grade(verify, a.pick.impl, a.pick.dtype) or "-",
             "faster than the usual choice": _speedup(a)} for a in chosen(found)]
    frame = pd.DataFrame(rows)
    if set(frame["device"]) == {"cpu"}:
        frame = frame.drop(columns="device")
    return markdown.join(
        markdown.heading(2, "Answer"),
        "What to use, per workload and size, in the dtype most code uses:",
        markdown.table(frame, index=False),
        "*use*: the fastest implementation that passes `verify` (checked against a float64 "
        "reference); *threads*: the thread count it was timed with; *grade*: how closely it "
        "matches the reference (`exact`: within a few rounding steps of the dtype; `float32`: "
        "as close as float32 arithmetic allows); *faster than the usual choice*: how many times "
        "faster than the seed or plain implementation most code starts from, timed in the same "
        "run.")


def _facts(a: Answer, verify: Optional[pd.DataFrame]) -> str:
    facts = [fmt.threads(a.pick.threads)]
    g = grade(verify, a.pick.impl, a.pick.dtype)
    if g:
        facts.append(g)
    compared = a.usual and a.usual != a.pick.impl and math.isfinite(a.speedup)
    facts.append(_speedup(a) + (f" vs {a.usual}" if compared else ""))
    return ", ".join(facts)


def _speedup(a: Answer) -> str:
    if a.usual == a.pick.impl:
        return "1x (it is the usual choice)"
    if a.usual is None:
        return "no usual choice timed"
    if not math.isfinite(a.speedup):     # the usual choice's cell was not timed, or flagged
        return f"{a.usual} (the usual choice) not timed here"
    return fmt.ratio(a.speedup)


def still_flagged(run: Run, found: Sequence[Answer] = ()) -> str:
    """Said once, at the top: how many cells stayed flagged, by which rules, the workloads left
    with no answer at all, and what to do."""
    marked, timed = flag_rules.flagged_count(run.bench)
    if not marked:
        return ""
    missing = unanswered(run.bench, found)
    lost = (f"; **no answer for {', '.join(f'`{w}`' for w in missing)}**, every timed cell of "
            "theirs flagged" if missing else "")
    fewer = flag_rules.answered_at_fewer(run.bench)
    return (f"**{marked} of {timed} timed cells stayed flagged** "
            f"({flag_rules.why_flagged(run.bench)}, even when measured again) and are left out "
            f"of the answer{lost}" + (f"; {fewer}" if fewer else "")
            + f"; {flag_rules.what_to_do(str(run.path))}.")


def unanswered(bench: pd.DataFrame, found: Sequence[Answer]) -> list[str]:
    """Workloads timed with no answer because every implementation cell of theirs timed ok is
    flagged (a busy machine), in the order the sweep timed them: an answer table of one row must
    not read as the whole run's."""
    if bench.empty:
        return []
    timed = bench[(bench["status"] == "ok") & ~bench["is_roof"].astype(str).str.lower().isin(
        ("true", "1"))]
    marked = flag_rules.flagged(timed)
    answered = {a.pick.workload for a in found}
    return [w for w in dict.fromkeys(timed["workload"])
            if w not in answered and marked[timed["workload"] == w].all()]


def contents(detail: str, out: Path) -> str:
    """The links below the answer: every section of the detail, and the files beside it."""
    heads = [line[3:].strip() for line in detail.splitlines() if line.startswith("## ")]
    files = [html.FILENAME, *(n for n in ("verify.md", "bench.csv") if (out / n).is_file())]
    links = " · ".join(f"[{h}](#{anchor(h)})" for h in heads)
    return (f"**Below:** {links}.  \n**Files:** "
            + ", ".join(f"[{name}]({name})" for name in files) + ", plots in `plots/`.")


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")
