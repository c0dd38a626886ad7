"""Untimed calls until the allocator has settled, before a CPU cell's rounds are sized and timed.

Why: glibc serves an aligned block (posix_memalign, as torch's allocator asks) from its heap only
where a free chunk also holds the alignment's slack, and the block a call frees is a few bytes
short of that: each call extends the heap and faults a new block in, until freed blocks have
merged into chunks that fit. torch's `x + pe` at 4096 x 512 (8 MiB, one thread) took 5.5 ms
with 2,048 page faults in calls 2 to 7 and 0.8 ms with none from the eighth, in every process
(glibc's thresholds fixed by harness.util.heap or not). The warm call that sizes the rounds fell
in that stretch, so the cell ran `--quick`'s 3 rounds, some inside it: roof-torch-add's median
moved 5x between two runs of the same code. So the call is repeated until one faults in fewer
than SETTLED_PAGES pages, or SETTLE_CALLS calls or the cell's max_time have gone (a block past
the mmap threshold is mapped anew by every call, by design: that never settles, and is timed
as it is), and the last call's time sizes the rounds. Faults count pages as mapped: NumPy's
huge-page blocks (4 MiB and up) take one a 2 MiB, and read as settled; they come from plain
malloc, whose freed blocks fit the next call's (three 8 MiB blocks a call faulted none from
the third call here). The roofs step sizes its rounds its own way (harness.bench.pairing: a
round is many calls, each result held until the next), and does not settle.
"""

from __future__ import annotations

import resource
import time
from typing import Any, Callable, Optional

#: A call faulting in fewer pages than this (4 KiB each) reuses its memory (a few from other
#: threads of the process may fall in its window).
SETTLED_PAGES = 64
#: Untimed calls at most.
SETTLE_CALLS = 12


def page_faults() -> int:
    """Minor page faults of this process so far, every thread's."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def settle(call: Callable[[], Any], reset: Optional[Callable[[], None]],
           budget_s: float) -> float:
    """Call `call` (after `reset`, untimed, where an in-place kernel needs fresh inputs) until a
    call faults in fewer than SETTLED_PAGES pages, SETTLE_CALLS calls were made or `budget_s`
    has gone; the last call's seconds."""
    start = time.perf_counter()
    for _ in range(SETTLE_CALLS):
        if reset is not None:
            reset()
        before, begun = page_faults(), time.perf_counter()
        result = call()
        took = time.perf_counter() - begun
        del result
        if page_faults() - before < SETTLED_PAGES or time.perf_counter() - start >= budget_s:
            break
    return took
