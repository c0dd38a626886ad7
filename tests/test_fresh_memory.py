"""A first call's memory (harness.bench.fresh_memory): a new mapping at every size, while first
calls are timed, and primed pages."""

from __future__ import annotations

import contextlib
import resource
from types import SimpleNamespace

import numpy as np
import pytest

from harness.bench import fresh_memory

#: Under glibc's largest dynamic mmap threshold: served from its heap once a block that large
#: was freed, unless `fresh_mappings` holds.
SIZE = 8 << 20
PAGE_BYTES = 4096
HUGE_PAGE_BYTES = 2 << 20

glibc = pytest.mark.skipif(fresh_memory._glibc() is None, reason="glibc's malloc only")


def faults_of_a_block_after_others(times: int = 3) -> int:
    """Minor faults taken writing every page of a SIZE block, after `times` blocks of that size
    were written and let go (glibc's threshold has risen past SIZE by then)."""
    for _ in range(times):
        block = np.empty(SIZE, np.uint8)
        block[::PAGE_BYTES] = 1
        del block
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = np.empty(SIZE, np.uint8)
    block[::PAGE_BYTES] = 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
def test_within_fresh_mappings_a_block_under_the_heap_threshold_is_faulted_in_anew():
    """Each page (or huge page) of the block is faulted in: a new mapping, as a first call's
    output at 32 MiB and more always is. Outside, the same block reuses the heap's pages."""
    assert fresh_memory.warmed()
    assert faults_of_a_block_after_others() < SIZE // HUGE_PAGE_BYTES   # reused: none or few
    with fresh_memory.fresh_mappings() as took:
        assert took
        assert faults_of_a_block_after_others() >= SIZE // HUGE_PAGE_BYTES
    assert faults_of_a_block_after_others() < SIZE // HUGE_PAGE_BYTES   # the heap again after


@glibc
def test_fresh_mappings_restores_the_threshold_even_when_the_body_raises():
    with pytest.raises(RuntimeError):
        with fresh_memory.fresh_mappings():
            raise RuntimeError("a contender failed")
    assert faults_of_a_block_after_others() < SIZE // HUGE_PAGE_BYTES


@glibc
def test_release_hands_the_heaps_free_pages_back_so_the_next_block_faults_anew():
    """Within fresh_mappings a block from the heap's free memory (freed before the threshold
    fell) is faulted in anew once `release` ran; the step releases before every first call."""
    assert fresh_memory.warmed()
    faults_of_a_block_after_others()              # the heap now holds a freed SIZE block
    with fresh_memory.fresh_mappings():
        fresh_memory.release()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = np.empty(SIZE // 2, np.uint8)   # from the freed block's pages, unless released
        block[::PAGE_BYTES] = 1
        assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before >= SIZE // 2 // HUGE_PAGE_BYTES


def test_the_step_times_each_first_call_within_fresh_mappings_released_before_it(monkeypatch):
    """The worker (harness.bench.pairing.run) builds and times the first calls inside
    `fresh_mappings`, malloc's free pages released before each round's call, untimed."""
    import harness
    from harness.bench import pairing, threads, validity

    inside: list[bool] = []
    seen: list[bool] = []
    released: list[bool] = []

    @contextlib.contextmanager
    def recording(from_bytes: int = fresh_memory.FRESH_FROM_BYTES):
        inside.append(True)
        try:
            yield True
        finally:
            inside.pop()

    class Built:
        def __init__(self, cell_data: dict) -> None:
            self.cell = SimpleNamespace(impl=cell_data["impl"], bytes_out=cell_data["bytes"])

        def build(self):
            return (lambda: seen.append(bool(inside)) or np.zeros(1)), None

    monkeypatch.setattr(harness, "implementations", lambda plugins=(): None)
    monkeypatch.setattr(threads, "pin", lambda backend, n: "")
    monkeypatch.setattr(fresh_memory, "fresh_mappings", recording)
    monkeypatch.setattr(fresh_memory, "release", lambda: released.append(bool(inside)))
    monkeypatch.setattr(pairing, "Builder", Built)
    monkeypatch.setattr(validity, "output_problem", lambda out, cell: None)
    monkeypatch.setattr(pairing, "contender", lambda cell: pairing.Contender(cell["impl"], lambda: None))
    lines: list[dict] = []
    first = [{"backend": "numpy", "impl": "kernel", "bytes": 3 << 20},
             {"backend": "numpy", "impl": "roof-fill", "bytes": 3 << 20}]
    pairing.run({"threads": 1, "rounds": 1, "min_s": 0, "first_rounds": 2,
                 "outputs": [{"id": "a", "cells": first, "first": first}]}, lines.append)
    assert lines[-1]["status"] == "ok", lines[-1]
    assert sorted(lines[-1]["first_s"]) == ["kernel", "roof-fill"]
    assert seen and all(seen)                    # every first call (and its check) inside
    assert released.count(True) >= 4             # two contenders, two rounds, each released
