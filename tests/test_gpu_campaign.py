"""The GPU campaign's CPU-side logic (scripts/gpu_plan.py, scripts/gpu_campaign.py): which steps a
call runs, how a cut step resumes, what a call carries, and the round trip of its state. Nothing
here needs a GPU, a network or pip: commands go to a fake runner on a fake clock."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


plan = _load("gpu_plan")
sources = _load("kernel_sources")
campaign = _load("gpu_campaign")
NAMES = [s.name for s in plan.STEPS]


def test_a_call_starts_the_steps_that_fit_its_budget_in_order():
    state = plan.State()
    first = plan.next_steps(state, 540)
    assert [s.name for s in first] == NAMES[:len(first)]
    assert sum(s.estimate_s for s in first) <= 540
    state.done = [s.name for s in first]
    second = plan.next_steps(state, 540)
    assert second and second[0].name == NAMES[len(first)]


def test_a_step_longer_than_the_budget_still_starts_when_first():
    longest = max(plan.STEPS, key=lambda s: s.estimate_s)
    state = plan.State(done=[s.name for s in plan.STEPS if s is not longest])
    assert plan.next_steps(state, 10) == [longest]
    assert plan.next_steps(plan.State(done=NAMES), 540) == []


def test_every_step_fits_a_call_and_the_library_comparison_comes_first():
    assert all(s.estimate_s <= plan.CALL_BUDGET_S for s in plan.STEPS)
    assert len(set(NAMES)) == len(NAMES)
    assert NAMES[:2] == ["verify", "apply-long"]     # a 15-minute lease answers these first


def test_a_bench_step_writes_under_its_state_folder_within_the_budget_and_resumes(tmp_path):
    step = next(s for s in plan.STEPS if s.bench and s.commands)
    fresh = step.argv(tmp_path, resume=False, budget_s=300)
    assert len(fresh) == len(step.commands) + 1
    bench = fresh[-1]
    assert bench[bench.index("--out") + 1] == str(tmp_path / step.name)
    assert bench[bench.index("--budget-s") + 1] == str(300 - plan.BENCH_END_S)
    assert "--resume" not in bench
    resumed = step.argv(tmp_path, resume=True, budget_s=200)
    # only the bench, resumed: the commands before it ran in the earlier call
    assert resumed == [bench[:-1] + [str(200 - plan.BENCH_END_S), "--resume"]]
    assert all("{state}" not in a for command in fresh for a in command)


def _journal(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_unfinished_cells_are_those_whose_last_row_is_a_budget_skip(tmp_path):
    skip = {"status": "skip", "reason": "sweep budget: 3 s left"}
    journal = _journal(tmp_path / "run" / "cells.jsonl", [
        {"key": "a", **skip}, {"key": "a", "status": "ok"}, {"key": "b", **skip},
        {"key": "c", "status": "skip", "reason": "float64 not supported"}])
    assert plan.unfinished_cells(journal, "sweep budget") == 1
    assert plan.unfinished_cells(tmp_path / "missing.jsonl", "sweep budget") == 0


def test_carry_limit():
    mib = 2**20
    assert plan.tree_bytes([30 * mib, 4 * mib], [20 * mib]) == 54 * mib
    assert plan.carry_problem(64 * mib) is None
    assert "65.0 MiB" in plan.carry_problem(65 * mib)


class FakeDevice:
    """A runner on a fake clock: each command takes `seconds`; commands naming `cut` are cut."""

    def __init__(self, clock: list[float], seconds: float = 30, cut: str = "", journal_rows=()):
        self.clock, self.seconds, self.cut, self.rows, self.calls = clock, seconds, cut, journal_rows, []

    def __call__(self, argv, env, timeout_s, log):
        self.calls.append(list(argv))
        if self.cut and self.cut in argv:
            self.clock[0] += timeout_s
            return 124
        self.clock[0] += self.seconds
        if "bench" in argv:
            out = Path(argv[argv.index("--out") + 1])
            rows = self.rows or [{"key": "x", "status": "ok"}]
            _journal(out / "20260101-000000-abc" / "cells.jsonl", rows)
        return 0


def test_run_steps_records_done_steps_and_resumes_a_cut_bench(tmp_path):
    clock = [0.0]
    bench_step = next(s for s in plan.STEPS if s.bench and not s.commands)
    done_before = [s.name for s in plan.STEPS[:plan.STEPS.index(bench_step)]]
    plan.State(done=list(done_before)).save(tmp_path / plan.STATE_DIR)
    envs = {False: {"which": "image"}, True: {"which": "numpy"}}

    cut = FakeDevice(clock, cut="bench")
    state = campaign.run_steps(tmp_path, 540, envs, runner=cut, clock=lambda: clock[0])
    assert bench_step.name in state.started and bench_step.name not in state.done
    assert "--resume" not in cut.calls[0]

    _journal(tmp_path / plan.STATE_DIR / bench_step.name / "20260101-000000-abc" / "cells.jsonl",
             [{"key": "x", "status": "skip", "reason": "sweep budget: cut"}])
    again = FakeDevice(clock)
    state = campaign.run_steps(tmp_path, 540, envs, runner=again, clock=lambda: clock[0])
    assert again.calls[0][-1] == "--resume"
    assert bench_step.name in state.done
    saved = plan.State.load(tmp_path / plan.STATE_DIR)
    assert saved.done == state.done and [e["step"] for e in saved.log][:2] == [bench_step.name] * 2


def test_a_bench_left_with_budget_skips_is_not_done(tmp_path):
    clock = [0.0]
    bench_step = next(s for s in plan.STEPS if s.bench and not s.commands)
    plan.State(done=[s.name for s in plan.STEPS if s is not bench_step]).save(tmp_path / plan.STATE_DIR)
    skipped = FakeDevice(clock, journal_rows=[{"key": "x", "status": "skip",
                                               "reason": "sweep budget: no time"}])
    state = campaign.run_steps(tmp_path, 540, {False: {}, True: {}}, runner=skipped,
                               clock=lambda: clock[0])
    assert bench_step.name not in state.done


def test_only_the_numba_cuda_step_runs_with_the_carried_numpy(tmp_path):
    clock, seen = [0.0], {}

    def runner(argv, env, timeout_s, log):
        seen.setdefault(env["which"], []).append(argv)
        clock[0] += 1
        return 0

    campaign.run_steps(tmp_path, 10_000, {False: {"which": "image"}, True: {"which": "numpy"}},
                       runner=runner, clock=lambda: clock[0])
    assert seen["numpy"] and all(any("numba-cuda" in a for a in argv) for argv in seen["numpy"])
    assert not any("numba-cuda-*" in argv for argv in seen["image"])


def test_pack_and_collect_round_trip(tmp_path, capsys, monkeypatch):
    device, home = tmp_path / "device", tmp_path / "home"
    plan.State(done=["verify"]).save(device / plan.STATE_DIR)
    (device / plan.STATE_DIR / "verify").mkdir()
    (device / plan.STATE_DIR / "verify" / "verify.csv").write_text("impl,pass\n")
    archive = campaign.pack(device, tmp_path / "out")
    monkeypatch.setattr(campaign, "moved_bytes", lambda root: 1)
    campaign.collect(home, archive.parent)
    assert (home / plan.STATE_DIR / "verify" / "verify.csv").read_text() == "impl,pass\n"
    assert plan.State.load(home / plan.STATE_DIR).done == ["verify"]
    assert "verify           done" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no gpu-campaign.tar.gz"):
        campaign.collect(home, tmp_path / "empty")


def test_wheels_are_asked_for_the_device_python_and_pinned():
    argv = campaign.download_argv("numpy==2.4.6", Path("w"))
    assert argv[argv.index("--python-version") + 1] == "3.12" and "--only-binary=:all:" in argv
    assert "manylinux_2_28_x86_64" in argv and argv[-1] == "numpy==2.4.6" and "--no-deps" in argv
    for name in (*campaign.DEVICE_WHEELS, "triton", "flash-attn"):
        assert sources.pinned(name).startswith(f"{name}==")
    with pytest.raises(ValueError, match="not pinned"):
        sources.pinned("no-such-package")


def test_flash_attn_extraction_takes_only_the_module_and_its_metadata(tmp_path):
    sdist = tmp_path / "flash_attn-9.9.9.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, text in (("PKG-INFO", "Name: flash_attn\nVersion: 9.9.9\n"),
                           (sources.FLASH_ATTN_MODULE, "def apply_rotary(): ...\n"),
                           ("flash_attn/__init__.py", "import flash_attn_2_cuda\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"flash_attn-9.9.9/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    into = tmp_path / "site"
    assert sources.extract_flash_attn(sdist, into) == "9.9.9"
    files = sorted(p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file())
    assert files == ["flash-attn-src/" + sources.FLASH_ATTN_MODULE, "flash_attn.egg-info/PKG-INFO"]


def test_next_refuses_a_budget_past_one_call():
    with pytest.raises(SystemExit):
        campaign.main(["next", "--budget-s", "700"])


def test_publish_gives_every_run_the_campaigns_verdicts(tmp_path, monkeypatch):
    folder = tmp_path / plan.STATE_DIR
    for sub, rows in (("verify", "impl,grade\nliger,exact\n"),
                      ("numba-cuda/verify", "impl,grade,reason\nnumba-cuda-table,fail,x\n")):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "verify.csv").write_text(rows)
    run = folder / "apply-long" / "20260101-000000-abc"
    _journal(run / "cells.jsonl", [{"key": "x", "status": "ok"}])
    reported = []
    monkeypatch.setattr(campaign.subprocess, "run",
                        lambda argv, cwd: reported.append(argv[4:]) or type("R", (), {"returncode": 0}))
    assert campaign.publish(tmp_path) == 0
    published = tmp_path / "results" / run.name
    assert reported == [[str(published)]]
    text = (published / "verify.csv").read_text().splitlines()
    assert text[0] == "impl,grade,reason" and len(text) == 3 and "numba-cuda-table,fail,x" in text
