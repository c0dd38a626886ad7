"""Was the machine busy while a cell ran? Measure it per cell, flag timings it may have distorted.

On a shared machine another process can take the cores a cell's threads need;
a parallel kernel then waits at every barrier for a thread that is not
running, and its median rises a thousandfold with an IQR that stays tight (the
slowdown is steady), so noise alone does not reveal it. Each worker therefore
records, in every row:

- `load_before`, `load_after`: the 1-minute load average (`os.getloadavg`) just
  before the cell's first call and after its timed rounds (it counts this
  cell's own threads too, and lags by about a minute);
- `others_busy`: how many cores, on average over the same window, were busy
  with anything but the worker process: CPU time the machine's cores (those
  this process may run on) spent busy, steal included, minus the worker's own
  CPU time, over the wall time. Setup is outside the window (a compiler's
  helper processes would count as others);
- `cores`: the cores the worker may run on;
- `threads_ran`: how many of the worker's threads ran for at least RAN_SHARE of the
  window (their on-CPU time, /proc's schedstat, in nanoseconds). A cell timed at N
  threads whose work ran on one (NumPy's ufuncs; torch below its grain size) needed one
  core, not N: beside one busy core of two it had a core to itself, and the load rule
  judges it by the threads that ran. A parallel kernel starved of cores still counts
  every thread that ran at all in the window (time-sliced, each gets its share), so it
  stays flagged;
- `waited`: how long the worker's threads were ready to run but waited for a CPU, in cores
  over the window (schedstat's run delay, in nanoseconds). `others_busy` comes from
  /proc/stat and times(2), which count in 10 ms ticks: over the 6-26 ms window of a short
  cell it reads 0.8 or 2.5 cores from the same machine, and beside one busy core of two,
  short one-thread cells (the plant of the compare gate's test among them) were flagged
  `load` at 1.5-2.8 cores while their thread never waited. A cell whose threads did not wait
  was not slowed by other processes taking its cores, whatever the ticks say.

The rules that flag a timing from these columns are harness.runs.flags.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from harness.util import cpus

COLUMNS = ("load_before", "load_after", "others_busy", "cores", "threads_ran", "waited")
#: Share of the window a thread must have run on a CPU to count as one the cell used.
RAN_SHARE = 0.1


@dataclass(frozen=True)
class Sample:
    """The machine at one moment: wall clock, CPU-seconds busy, this process's CPU-seconds."""

    wall: float
    busy_s: float     # busy time of the cores this process may use, summed over them
    own_s: float      # this process's CPU time (every thread)
    load: float       # 1-minute load average (NaN where the platform has none)
    cores: int
    #: on-CPU seconds of each of this process's threads (empty where /proc cannot tell)
    threads_s: Mapping[int, float] = field(default_factory=dict)
    #: seconds each of them waited on a run queue, ready to run
    waited_s: Mapping[int, float] = field(default_factory=dict)


def sample() -> Sample:
    """Read the clocks now (/proc/stat, times(2), the load average, and each thread's
    schedstat: tens of microseconds, under a millisecond for TensorFlow's pools)."""
    ran, waited = _thread_seconds()
    return Sample(time.monotonic(), _busy_seconds(), sum(os.times()[:2]), _load_average(),
                  len(cpus.affinity()), ran, waited)


def others_busy(before: Sample, after: Sample) -> float:
    """Average cores busy with anything but this process between two samples (NaN if unknown)."""
    wall = after.wall - before.wall
    if wall <= 0 or math.isnan(before.busy_s) or math.isnan(after.busy_s):
        return math.nan
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, others / wall)


def threads_ran(before: Sample, after: Sample) -> float:
    """How many of this process's threads ran RAN_SHARE of the wall time between two samples
    (NaN where /proc could not tell)."""
    wall = after.wall - before.wall
    if wall <= 0 or not after.threads_s:
        return math.nan
    ran = [t for t, s in after.threads_s.items() if s - before.threads_s.get(t, 0.0)
           >= RAN_SHARE * wall]
    return float(max(1, len(ran)))


def waited(before: Sample, after: Sample) -> float:
    """Cores' worth of this process's threads waiting, ready, for a CPU between two samples:
    their run delay over the wall time (NaN where /proc could not tell)."""
    wall = after.wall - before.wall
    if wall <= 0 or not after.waited_s:
        return math.nan
    return sum(s - before.waited_s.get(t, 0.0) for t, s in after.waited_s.items()) / wall


def columns(before: Optional[Sample], after: Optional[Sample]) -> dict[str, Any]:
    """The load columns of one row, from the samples around a cell (NaN for a missing one)."""
    if before is None:
        return {"load_before": math.nan, "load_after": math.nan, "others_busy": math.nan,
                "cores": 0, "threads_ran": math.nan, "waited": math.nan}
    if after is None:
        return {"load_before": before.load, "load_after": math.nan, "others_busy": math.nan,
                "cores": before.cores, "threads_ran": math.nan, "waited": math.nan}
    return {"load_before": before.load, "load_after": after.load,
            "others_busy": others_busy(before, after), "cores": before.cores,
            "threads_ran": threads_ran(before, after), "waited": waited(before, after)}


def _busy_seconds() -> float:
    """CPU-seconds the cores this process may run on have spent busy (steal included: a
    hypervisor running someone else is someone else), NaN where psutil cannot tell."""
    try:
        import psutil

        per_cpu = psutil.cpu_times(percpu=True)
    except Exception:
        return math.nan
    mine = cpus.affinity()
    chosen = [per_cpu[i] for i in mine] if mine and max(mine) < len(per_cpu) else per_cpu
    return sum(_busy(t) for t in chosen)


def _busy(times: Any) -> float:
    idle = times.idle + getattr(times, "iowait", 0.0)
    # guest time is already inside user/nice on Linux: not counted twice
    guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    return sum(times) - idle - guest


def _thread_seconds() -> tuple[dict[int, float], dict[int, float]]:
    """thread id -> on-CPU seconds, and -> seconds waited ready to run, for each thread of this
    process (Linux's schedstat, in nanoseconds; {} where there is none)."""
    ran: dict[int, float] = {}
    waited: dict[int, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return ran, waited
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                on_cpu, delay = f.read().split()[:2]
            ran[int(tid)], waited[int(tid)] = int(on_cpu) / 1e9, int(delay) / 1e9
        except (OSError, ValueError):
            continue            # a thread that ended meanwhile
    return ran, waited


def _load_average() -> float:
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return math.nan


Meter = Callable[[], Sample]
