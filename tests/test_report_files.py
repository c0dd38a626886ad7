"""Files as a user finds them: modes of what harness.util.io writes, and the commit env.json records."""

from __future__ import annotations

import os
import stat
import subprocess

import pandas as pd
import pytest

from harness.bench import env
from harness.util import io


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_written_files_get_the_usual_mode_not_0600(tmp_path, umask_022):
    """Issue 10, item 7: report.md, bench.csv, verify.* and env.json were created 0600."""
    text = io.write_text(tmp_path / "report.md", "# report\n")
    table = io.write_csv(tmp_path / "bench.csv", pd.DataFrame({"a": [1]}))
    for path in (text, table):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert text.read_text() == "# report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_mode_follows_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        path = io.write_text(tmp_path / "private.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = io.write_text(tmp_path / "report.md", "old\n")
    with pytest.raises(TypeError):   # fails inside the write, after the temporary exists
        io.write_text(path, 123)  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_untracked_results_do_not_make_a_clean_clone_dirty(tmp_path, monkeypatch):
    """Issue 10, item 7: a clean clone reported its commit dirty because of its own results/."""
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", "code.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    (tmp_path / "results" / "20260101-000000-abc").mkdir(parents=True)
    (tmp_path / "results" / "20260101-000000-abc" / "bench.csv").write_text("a\n")
    monkeypatch.setattr(env, "ROOT", tmp_path)
    assert env.collect("run", [], 1)["git_dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert env.collect("run", [], 1)["git_dirty"] is True
