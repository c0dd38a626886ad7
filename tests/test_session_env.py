"""The nox sessions' processes keep the bytecode they compile, whatever the caller's shell says.

The stack is installed with pip's --no-compile, so its modules are compiled on first import;
a process that may not write the result compiles torch and TensorFlow again, and the tests and
a bench start dozens of processes (noxfile.RUN_ENV says why and what it costs).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

NOXFILE = Path(__file__).resolve().parents[1] / "noxfile.py"


def run_env() -> dict[str, str]:
    """noxfile.RUN_ENV, read without importing nox (not installed in the stack)."""
    for node in ast.parse(NOXFILE.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", "") == "RUN_ENV" for t in targets):
                return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py has no RUN_ENV")


def test_a_session_process_writes_bytecode_under_a_shell_that_forbids_it(tmp_path: Path) -> None:
    (tmp_path / "fresh_module.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **run_env()}
    env.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run([sys.executable, "-c", "import fresh_module"], cwd=tmp_path, env=env,
                   check=True, timeout=60)
    assert list((tmp_path / "__pycache__").glob("fresh_module.*.pyc")), \
        "a session's process compiled a module and kept nothing: every process compiles again"
