"""Numba kernels built in factories hit the on-disk cache in a second process (impls/_numba_cache.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("numba")
#: Fresh processes compiling and loading kernels: end to end, in `nox -s e2e` (which CI runs).
pytestmark = pytest.mark.e2e

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


def _compile(tmp_path: Path, scale: float, shared: Path | None = None) -> dict:
    """Compile in a fresh process: in `tmp_path`'s own cache, or with `shared` the machine's
    cache as every checkout uses it (no NUMBA_CACHE_DIR)."""
    script = tmp_path / "kernels.py"
    if not script.exists():
        script.write_text(KERNELS)
    where = ({"PE_HARNESS_NUMBA_CACHE": str(shared)} if shared else
             {"NUMBA_CACHE_DIR": str(tmp_path / "cache")})
    env = {**where, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
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


def test_a_second_checkout_of_the_same_source_loads_instead_of_compiling(tmp_path: Path) -> None:
    """Two clones (other folders, files written at other times) share the machine's cache:
    the second loads what the first compiled; changed source is compiled anew, beside the
    first version's kernels, which the first clone still loads."""
    shared, one, two, edited = (tmp_path / name for name in ("shared", "one", "two", "edited"))
    for clone in (one, two, edited):
        clone.mkdir()
    first = _compile(one, 2.0, shared)
    (two / "kernels.py").write_text(KERNELS)        # the same source, a later file
    again = _compile(two, 2.0, shared)
    (edited / "kernels.py").write_text(KERNELS.replace("x * scale", "x * scale + 0"))
    changed = _compile(edited, 2.0, shared)
    back = _compile(one, 2.0, shared)        # as a branch switched back, or a second worktree
    assert (first["misses"], first["hits"]) == (1, 0)
    assert (again["misses"], again["hits"]) == (0, 1), "the second checkout compiled again"
    assert (changed["misses"], changed["hits"]) == (1, 0), "changed source served a stale kernel"
    assert (back["misses"], back["hits"]) == (0, 1), "another version's entries replaced these"
    assert first["out"] == again["out"] == changed["out"] == back["out"] == [0, 2, 4, 6]


def test_a_captured_llvm_type_keys_the_same_before_and_after_its_code_is_generated() -> None:
    """A vector kernel's code generator captures llvmlite IR types; writing the module's IR
    caches each type's text on it, which changed its pickle: the key looked up before a compile
    was not the key saved after it, so every process compiled those kernels again."""
    from llvmlite import ir

    from harness.impls._numba_cache import stable_key

    lanes = ir.VectorType(ir.FloatType(), 8)

    def load(builder, ptr):
        return builder.bitcast(ptr, lanes.as_pointer())

    before = stable_key(load)
    str(lanes)                          # what writing a module's IR does to it
    assert stable_key(load) == before
    wider = ir.VectorType(ir.FloatType(), 16)

    def load_wider(builder, ptr):
        return builder.bitcast(ptr, wider.as_pointer())

    assert stable_key(load_wider) != before


def test_two_entries_compiled_at_once_never_share_a_data_file(tmp_path: Path) -> None:
    """Two processes compile two dtypes of one factory kernel at once; A read the index before B
    wrote it and wrote its own first, but its data last. Numba numbered both data files 1, so
    B's entry pointed at A's code (a float16 cache came back with bfloat16 bits)."""
    from harness.impls._numba_cache import _cache_class

    keyed = _cache_class().file_class
    f16, bf16 = (("u2[::1]",), "cpu", ("float16 codec", "")), (("u2[::1]",), "cpu", ("bf16 codec", ""))
    keyed(str(tmp_path), "fill-3.py311", "stamp").save(bf16, "bfloat16 code")   # B: index, data
    racing = keyed(str(tmp_path), "fill-3.py311", "stamp")
    racing._load_index = lambda: {}                      # A read the index before B wrote it,
    racing._save_index = lambda overloads: None          # and wrote its own before B did
    racing.save(f16, "float16 code")                     # A's data, written last
    reader = keyed(str(tmp_path), "fill-3.py311", "stamp")
    assert reader.load(bf16) == "bfloat16 code"
    assert reader.load(f16) is None                      # A's entry was lost: compiled again
