"""Implementations that misbehave, for bench's fault handling: raise, kill their process, hang."""

from __future__ import annotations

import os
import time

import numpy as np

from harness import Spec, register
from tests.bench_plugins.right import paper_table


@register(name="bt-crash", backend="numpy")
def build_crash(spec: Spec):
    def table():
        raise RuntimeError("deliberate failure in bt-crash")

    return table


@register(name="bt-exit", backend="numpy")
def build_exit(spec: Spec):
    def table():
        os._exit(3)

    return table


@register(name="bt-hang", backend="numpy")
def build_hang(spec: Spec):
    def table():
        time.sleep(3600)

    return table


@register(name="bt-ok", backend="numpy")
def build_ok(spec: Spec):
    return lambda: paper_table(spec)
