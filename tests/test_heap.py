"""glibc's heap in a timing process (harness.util.heap): one steady state for the rounds, and
malloc's free pages handed back before each first call, so that its blocks are faulted in anew."""

from __future__ import annotations

import resource
from types import SimpleNamespace

import numpy as np
import pytest

from harness.util import heap

#: Under glibc's largest dynamic mmap threshold: served from its heap once a block that large
#: was freed.
SIZE = 8 << 20
PAGE_BYTES = 4096
HUGE_PAGE_BYTES = 2 << 20

glibc = pytest.mark.skipif(heap._glibc() is None, reason="glibc's malloc only")


def faults_of_a_block(release_first: bool, times: int = 3) -> int:
    """Minor faults taken writing every page of a SIZE block, after `times` blocks of that size
    were written and let go (glibc's threshold has risen past SIZE by then: its heap keeps
    them), malloc's free pages released just before or not."""
    for _ in range(times):
        block = np.empty(SIZE, np.uint8)
        block[::PAGE_BYTES] = 1
        del block
    if release_first:
        assert heap.release()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = np.empty(SIZE, np.uint8)
    block[::PAGE_BYTES] = 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
def test_after_release_a_block_from_the_heap_is_faulted_in_anew():
    """Each page (or huge page) of the block is faulted in, as a new mapping's are; without the
    release the same block reuses pages a freed block left, faulting none or few."""
    assert faults_of_a_block(release_first=False) < SIZE // HUGE_PAGE_BYTES
    assert faults_of_a_block(release_first=True) >= SIZE // HUGE_PAGE_BYTES


def test_the_step_releases_malloc_memory_after_each_build_before_its_first_call(monkeypatch):
    """The worker (harness.bench.pairing.run): every round of every first-call contender is
    built, then malloc's free pages are released, then its call is timed."""
    import harness
    from harness.bench import pairing, threads, validity

    events: list[str] = []

    class Built:
        def __init__(self, cell_data: dict) -> None:
            self.cell = SimpleNamespace(impl=cell_data["impl"])

        def build(self):
            events.append("build")
            return (lambda: events.append("call") or np.zeros(1)), None

    monkeypatch.setattr(harness, "implementations", lambda plugins=(): None)
    monkeypatch.setattr(threads, "pin", lambda backend, n: "")
    monkeypatch.setattr(heap, "release", lambda: events.append("release") or True)
    monkeypatch.setattr(pairing, "Builder", Built)
    monkeypatch.setattr(validity, "output_problem", lambda out, cell: None)
    monkeypatch.setattr(pairing, "contender", lambda cell: pairing.Contender(cell["impl"], lambda: None))
    lines: list[dict] = []
    first = [{"backend": "numpy", "impl": "kernel"}, {"backend": "numpy", "impl": "roof-fill"}]
    pairing.run({"threads": 1, "rounds": 1, "min_s": 0, "first_rounds": 2,
                 "outputs": [{"id": "a", "cells": first, "first": first}]}, lines.append)
    assert lines[-1]["status"] == "ok", lines[-1]
    assert sorted(lines[-1]["first_s"]) == ["kernel", "roof-fill"]
    checked = ["build", "call"] * 2             # each contender built and its result checked once
    assert events == checked + ["build", "release", "call"] * 4   # two rounds of two contenders


STEADY_CHILD = """
import resource, torch
torch.set_num_threads(1)
x = torch.arange(4096 * 512, dtype=torch.float32).reshape(4096, 512)
faults = []
for _ in range(12):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    y = torch.stack([x.sin(), x.cos()], -1).flatten(-2)   # 8 + 8 + 16 MiB, freed each call
    del y
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults)
"""


@glibc
def test_a_timing_process_reuses_its_heap_after_a_few_calls():
    """Under `steady_env` the seed's torch stack (32 MiB of blocks a call) settles into memory it
    reuses: its last calls fault in no page. A trim threshold alone (no mmap threshold) takes
    8,195 every call: every block mapped. glibc's defaults settle too in a process this bare;
    in a worker, after other implementations' allocations, four processes of five took 5,092
    every call (harness.util.heap): that luck this test does not reproduce."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, **heap.steady_env({})}
    out = subprocess.run([sys.executable, "-c", STEADY_CHILD], env=env, capture_output=True,
                         text=True, timeout=120)
    faults = json.loads(out.stdout.strip().splitlines()[-1])
    assert faults[-4:] == [0, 0, 0, 0], faults


def test_the_users_malloc_tunables_win_and_others_are_kept():
    env = heap.steady_env({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=5:glibc.cpu.x=1"})
    assert env["GLIBC_TUNABLES"] == ("glibc.malloc.trim_threshold=5:glibc.cpu.x=1:"
                                     f"glibc.malloc.mmap_threshold={32 << 20}")
