"""Numba kernels built in factories hit the on-disk cache in a second process (impls/_numba_cache.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parent.parent

#: A factory kernel that captures another kernel (as the codecs' store and the shared helpers
#: are captured), compiled in a fresh process; prints its cache hits and misses and its key.
KERNELS = textwrap.dedent('''
    import functools, json, sys
    import numpy as np
    from harness.core import plugins

    plugins.load_builtins()   # harness.impls, from this tree whether installed or not
    from harness.impls._numba_cache import njit, stable_key

    @functools.cache
    def kernels(scale):
        @njit(inline="always")
        def times(x):
            return x * scale

        @njit()
        def fill(out):
            for i in range(out.size):
                out[i] = times(i)

        return fill

    fill = kernels(float(sys.argv[1]))
    out = np.empty(4)
    fill(out)
    print(json.dumps({"hits": sum(fill.stats.cache_hits.values()),
                      "misses": sum(fill.stats.cache_misses.values()),
                      "key": stable_key(fill.py_func), "out": out.tolist()}))
''')


def _compile(tmp_path: Path, scale: float) -> dict:
    script = tmp_path / "kernels.py"
    if not script.exists():      # rewritten, its new stamp would invalidate the cache
        script.write_text(KERNELS)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script), repr(scale)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_kernel_capturing_a_kernel_hits_the_cache_in_the_next_process(tmp_path: Path) -> None:
    first = _compile(tmp_path, 2.0)
    again = _compile(tmp_path, 2.0)
    assert (first["misses"], first["hits"]) == (1, 0)
    assert (again["misses"], again["hits"]) == (0, 1)       # numba's own key misses here
    assert again["key"] == first["key"] and again["out"] == first["out"] == [0, 2, 4, 6]


def test_a_different_captured_constant_is_compiled_not_served(tmp_path: Path) -> None:
    """The key follows what the captured kernel captured: another scale is another kernel."""
    first = _compile(tmp_path, 2.0)
    other = _compile(tmp_path, 3.0)
    assert other["key"] != first["key"]
    assert (other["misses"], other["hits"]) == (1, 0)
    assert other["out"] == [0, 3, 6, 9]
