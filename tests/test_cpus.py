"""Thread counts from the CPUs this process may use (affinity, cgroup quota), not the machine's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.util import cpus

ROOT = Path(__file__).resolve().parent.parent

ONE_CORE = """
import json, os
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from harness import cli
from harness.bench import cli as bench_cli, options
from harness.util import cpus
args = cli.parse({"bench": bench_cli}, ["bench", "--quick"])
try:
    options.parse(cli.parse({"bench": bench_cli}, ["bench", "--threads", "2"]))
    refused = ""
except ValueError as exc:
    refused = str(exc)
print(json.dumps({"threads": options.parse(args).grid.threads, "env": cpus.describe(),
                  "refused": refused}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(cpus.affinity()) < 2,
                    reason="needs CPU affinity and at least two CPUs to take one away")
def test_a_run_pinned_to_one_core_times_all_cores_as_one():
    out = subprocess.run([sys.executable, "-c", ONE_CORE], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    found = json.loads(out.splitlines()[-1])
    assert found["threads"] == [1]
    assert found["env"]["cpus_affinity"] == found["env"]["cpus_usable"] == 1
    assert found["env"]["cpus_machine"] == os.cpu_count()
    assert "--threads takes a comma-separated list of integers from 1 to 1" in found["refused"]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_quota_is_the_tightest_on_the_way_up(tmp_path):
    write(tmp_path / "proc", "0::/a/b\n")
    write(tmp_path / "cg/a/cpu.max", "150000 100000\n")
    write(tmp_path / "cg/a/b/cpu.max", "max 100000\n")
    write(tmp_path / "cg/cpu.max", "400000 100000\n")
    assert cpus.quota(tmp_path / "cg", tmp_path / "proc") == 1.5


def test_cgroup_v1_quota_and_no_limit(tmp_path):
    write(tmp_path / "proc", "4:memory:/m\n3:cpu,cpuacct:/x\n")
    write(tmp_path / "cg/cpu,cpuacct/x/cpu.cfs_quota_us", "50000\n")
    write(tmp_path / "cg/cpu,cpuacct/x/cpu.cfs_period_us", "100000\n")
    assert cpus.quota(tmp_path / "cg", tmp_path / "proc") == 0.5
    write(tmp_path / "cg/cpu,cpuacct/x/cpu.cfs_quota_us", "-1\n")
    assert cpus.quota(tmp_path / "cg", tmp_path / "proc") is None
    assert cpus.quota(tmp_path / "cg", tmp_path / "missing") is None


def test_usable_is_the_affinity_capped_by_the_quota_rounded_up(monkeypatch):
    monkeypatch.setattr(cpus, "affinity", lambda: [0, 1, 2, 3])
    monkeypatch.setattr(cpus, "quota", lambda: 1.5)
    assert cpus.usable() == 2
    monkeypatch.setattr(cpus, "quota", lambda: 0.2)
    assert cpus.usable() == 1
    monkeypatch.setattr(cpus, "quota", lambda: None)
    assert cpus.usable() == 4
