"""A bench post-step that fails makes `bench` fail, and says so in post_failures.json and the report.

Before, a dead verify step left correct implementations "not in verify.csv"
(never recommended) while bench exited 0 with no word in the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.bench import post
from harness.runs import journal

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = '''
import os, sys
import numpy as np
import psutil
from harness import reference, register

# verify's own process never imports a plugin: the child that lists the implementations for it
# dies, so the post-step fails (a plugin exiting at import is a usage error)
if "verify" in psutil.Process(os.getppid()).cmdline():
    os._exit(5)

@register(name="pf-ok", backend="numpy")
def build(spec):
    return lambda: reference(spec).astype(spec.dtype)
'''
TINY = ["--threads", "1", "--dtypes", "float32", "--workloads", "table", "--lengths", "8",
        "--d-models", "8", "--max-time", "0.01", "--quick"]


@pytest.mark.e2e
def test_a_failed_post_step_fails_bench_and_is_named_at_the_top_of_the_report(tmp_path):
    plugin = tmp_path / "dies_in_verify.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "--out", str(out), *TINY,
                           "--plugin", str(plugin), "--only", "pf-*"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    run_dir = next(out.glob(f"*/{journal.FILENAME}")).parent
    assert done.returncode == 3, done.stdout + done.stderr
    assert "post-step verify failed" in done.stderr

    failures = json.loads((run_dir / post.FAILURES).read_text())
    assert failures == [{"step": "verify", "status": "failed",
                         "detail": "exited with code 2",
                         "log": "logs/post-verify.log"}]
    assert post.read_failures(run_dir) == failures
    steps = {s["name"]: s["status"] for s in json.loads((run_dir / post.FILENAME).read_text())}
    assert steps["verify"] == "failed" and steps["report"] == "ok"
    assert all(status == "ok" for name, status in steps.items() if name != "verify"), steps
    head = (run_dir / "report.md").read_text().split("\n## ")[0]
    assert "post-step `verify` failed" in head


def test_verify_finding_wrong_implementations_is_not_a_failed_step(tmp_path):
    plugin = tmp_path / "wrong.py"
    plugin.write_text("import numpy as np\nfrom harness import register\n"
                      "register(name='pf-wrong', backend='numpy')"
                      "(lambda spec: (lambda: np.zeros((spec.length, spec.d_model), spec.dtype)))\n")
    (tmp_path / "logs").mkdir()
    step = post.run_verb("verify", tmp_path, [str(plugin)], ["pf-wrong"], quick=True)
    assert step.status == "found" and not step.failed, step.detail
    assert post.write_failures(tmp_path, [step]).read_text() == "[]\n"
