"""The GPU campaign in one command per call: `python3 scripts/gpu_campaign.py next`.

On the CPU, once (docs/gpu.md):

    python scripts/gpu_campaign.py prepare     # wheels + flash-attn's Triton rotary -> .gpu-wheels/
    python scripts/gpu_campaign.py plan        # what is left, and the device call to make

Then, on the device machine, the same call until `plan` says nothing is left (each call runs the
steps that fit its 10 minutes and resumes a cut bench; scripts/gpu_plan.py holds the steps):

    command: python3 scripts/gpu_campaign.py next
    carry:   [".gpu-wheels", ".gpu-campaign"]

and after each call, on the CPU, `python scripts/gpu_campaign.py collect FILES_AT` (the folder the
call's files came back to) brings the state and outputs home. `publish` copies the finished bench
runs under results/ and builds their report.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT)]

import gpu_plan as plan  # noqa: E402
import kernel_sources  # noqa: E402
from harness.bench.budget import BUDGET_PREFIX  # noqa: E402

#: What the device machine lacks, as wheels for its Python 3.12 (x86-64, manylinux), pinned in
#: constraints.txt: the Triton kernel libraries, and the NumPy numba-cuda 0.30.4 loads under
#: (the image's NumPy 2.5.2 breaks its CUDA target; 2.4.6 is the stack's own pin).
DEVICE_WHEELS = ("liger-kernel", "xformers", "numpy")
#: Not carried, and why (docs/gpu.md says the same).
NOT_CARRIED = {
    "flashinfer-python": "its wheel alone is 62 MB and it needs apache-tvm-ffi, cuda-tile, "
                         "nvidia-cutlass-dsl and more; a call moves 64 MiB, of which the working "
                         "tree takes ~36",
    "vllm": "its wheel is hundreds of MB of CUDA ops compiled against one torch release",
    "transformer-engine": "its torch extension is built from source against the installed torch "
                          "with nvcc, and its core wheel exceeds what a call moves",
}
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
SITE = Path("/tmp/pe-campaign-site")
CARRY = (plan.WHEELS_DIR, plan.STATE_DIR)
PACKED = "gpu-campaign.tar.gz"
Runner = Callable[[Sequence[str], dict, float, Path], int]


def download_argv(requirement: str, into: Path, python: str = sys.executable) -> list[str]:
    """pip download of one wheel for the device machine's Python 3.12 on x86-64 Linux."""
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    return [python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(into),
            requirement]


def prepare(root: Path = ROOT) -> int:
    """Download what the device lacks into .gpu-wheels/ (wheels/ and src/)."""
    wheels, src = root / plan.WHEELS_DIR / "wheels", root / plan.WHEELS_DIR / "src"
    shutil.rmtree(root / plan.WHEELS_DIR, ignore_errors=True)
    wheels.mkdir(parents=True)
    for name in DEVICE_WHEELS:
        subprocess.run(download_argv(kernel_sources.pinned(name), wheels), check=True)
    version = kernel_sources.flash_attn_source(src)
    print(f"{root / plan.WHEELS_DIR}: {', '.join(p.name for p in sorted(wheels.iterdir()))}; "
          f"flash-attn {version} ({kernel_sources.FLASH_ATTN_MODULE})")
    for name, why in NOT_CARRIED.items():
        print(f"not carried: {name}: {why}")
    return show_plan(root)


def _sizes(paths: Sequence[Path]) -> list[int]:
    return [p.stat().st_size for p in paths if p.is_file()]


def moved_bytes(root: Path = ROOT) -> int:
    """The bytes a device call moves: tracked and untracked-but-not-ignored files, plus CARRY."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True).stdout.decode()
    tree = _sizes([root / name for name in listed.split("\0") if name])
    carried = _sizes([p for c in CARRY for p in (root / c).rglob("*")])
    return plan.tree_bytes(tree, carried)


def show_plan(root: Path = ROOT) -> int:
    state = plan.State.load(root / plan.STATE_DIR)
    pending = state.pending()
    for step in plan.STEPS:
        mark = "done" if step.name in state.done else (
            "started" if step.name in state.started else "to run")
        print(f"{step.name:16} {mark:8} ~{step.estimate_s:>4} s  {step.why}")
    left = sum(s.estimate_s for s in pending)
    print(f"~{left / 60:.0f} min of commands left; a session lends ~15 min of device time, each "
          "call's start (1-2 min) included")
    total = moved_bytes(root)
    problem = plan.carry_problem(total)
    print(f"a call moves {total / 2**20:.1f} MiB of {plan.CARRY_LIMIT / 2**20:.0f}"
          + (f": {problem}" if problem else ""))
    if not pending:
        print("nothing left: `python scripts/gpu_campaign.py publish`")
        return 0
    print(f'next device call: command "python3 scripts/gpu_campaign.py next", carry {list(CARRY)}')
    return 1 if problem else 0


def install(root: Path, site: Path = SITE) -> dict[bool, dict]:
    """The carried wheels installed (once per machine) under `site`: NumPy in its own folder,
    the rest in another. Returns the steps' environments, by whether a step wants the carried
    NumPy: the site (and that NumPy), flash-attn's extracted source and the repository on the
    path."""
    wheels = sorted((root / plan.WHEELS_DIR / "wheels").glob("*.whl"))
    folders = {False: site / "libraries", True: site / "numpy"}
    for numpy, folder in folders.items():
        chosen = [w for w in wheels if w.name.startswith("numpy-") == numpy]
        marker, names = folder / ".installed", "\n".join(w.name for w in chosen)
        if chosen and not (marker.is_file() and marker.read_text() == names):
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                            "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade",
                            "--target", str(folder), *map(str, chosen)], check=True)
            marker.write_text(names)
    common = [str(folders[False]), str(root / plan.WHEELS_DIR / "src"), str(root),
              os.environ.get("PYTHONPATH", "")]
    return {numpy: {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
                    "PYTHONPATH": os.pathsep.join(p for p in ([str(folders[True])] if numpy else [])
                                                  + common if p)}
            for numpy in (False, True)}


def subprocess_runner(argv: Sequence[str], env: dict, timeout_s: float, log: Path) -> int:
    """Run one command, its output appended to `log`; 124 when it outlived `timeout_s`."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            return subprocess.run(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=max(timeout_s, 1)).returncode
        except subprocess.TimeoutExpired:
            out.write(f"(stopped after {timeout_s:.0f} s: the next call resumes this step)\n")
            return 124


def run_steps(root: Path, budget_s: float, envs: dict[bool, dict], runner: Runner = subprocess_runner,
              clock: Callable[[], float] = time.monotonic) -> plan.State:
    """Run the steps that fit `budget_s`, recording each in the state as it ends."""
    folder = root / plan.STATE_DIR
    state = plan.State.load(folder)
    start = clock()
    for step in plan.next_steps(state, budget_s):
        left = budget_s - (clock() - start)
        if left <= 0:
            break
        resume = bool(step.bench) and _journal(folder / step.name).is_file()
        log = folder / "logs" / f"{step.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        began, codes = clock(), []
        for argv in step.argv(folder, resume, left):
            left = budget_s - (clock() - start)
            codes.append(runner(argv, envs[step.carried_numpy], left, log) if left > 0 else 124)
            if codes[-1] == 124:
                break
        finished = 124 not in codes and not (step.bench and plan.unfinished_cells(
            _journal(folder / step.name), BUDGET_PREFIX))
        state.record(step, f"exit {codes}", clock() - began, finished)
        state.save(folder)
    return state


def _journal(run_root: Path) -> Path:
    runs = sorted(run_root.glob("*/cells.jsonl"))
    return runs[-1] if runs else run_root / "none" / "cells.jsonl"


def pack(root: Path, out: Path) -> Path:
    """The state folder as one archive under `out` (what comes back from the device)."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / PACKED
    with tarfile.open(target, "w:gz") as tar:
        tar.add(root / plan.STATE_DIR, arcname=plan.STATE_DIR)
    return target


def collect(root: Path, files_at: Path) -> int:
    """Unpack a device call's archive over the local state folder."""
    archive = next(files_at.rglob(PACKED), None)
    if archive is None:
        raise ValueError(f"collect: no {PACKED} under {files_at}")
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return show_plan(root)


def next_call(root: Path, budget_s: float) -> int:
    """On the device: install, run what fits, pack the state into $OUT."""
    out = Path(os.environ.get("OUT", root / plan.STATE_DIR / "out"))
    try:
        state = run_steps(root, budget_s, install(root))
    finally:
        print(f"packed {pack(root, out)}")
    print(f"done: {state.done}; left: {[s.name for s in state.pending()]}")
    return 0


def merged_verify(folder: Path) -> list[dict]:
    """Every verify.csv the campaign wrote (the kernels', the other CUDA ones', numba-cuda's),
    as one list of rows: the verdicts each published run's report grades its cells by."""
    rows: list[dict] = []
    for path in sorted(folder.rglob("verify.csv")):
        with path.open(newline="") as f:
            rows += list(csv.DictReader(f))
    return rows


def publish(root: Path = ROOT) -> int:
    """Copy the finished bench runs under results/, each with the campaign's verify.csv, and
    build their report together."""
    folder, runs = root / plan.STATE_DIR, []
    verdicts = merged_verify(folder)
    for step in plan.STEPS:
        for run in sorted((folder / step.name).glob("*/cells.jsonl")):
            target = root / "results" / run.parent.name
            shutil.copytree(run.parent, target, dirs_exist_ok=True)
            if verdicts:
                names = list(dict.fromkeys(k for row in verdicts for k in row))
                with (target / "verify.csv").open("w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=names)
                    writer.writeheader()
                    writer.writerows(verdicts)
            runs.append(str(target))
    if not runs:
        raise ValueError("publish: no bench run under .gpu-campaign yet")
    return subprocess.run([sys.executable, "-m", "harness", "report", *runs], cwd=root).returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("prepare", help="on the CPU: download what the device lacks")
    verbs.add_parser("plan", help="what is left, and the device call to make")
    step = verbs.add_parser("next", help="on the device: run the steps that fit one call")
    step.add_argument("--budget-s", type=float, default=plan.CALL_BUDGET_S)
    got = verbs.add_parser("collect", help="on the CPU: unpack a device call's files")
    got.add_argument("files_at", type=Path)
    verbs.add_parser("publish", help="on the CPU: the bench runs under results/, with a report")
    args = parser.parse_args(argv)
    if args.verb == "next" and not 0 < args.budget_s <= 600:
        parser.error(f"--budget-s must be in (0, 600] (a call runs 10 minutes), got {args.budget_s}")
    try:
        if args.verb == "prepare":
            return prepare()
        if args.verb == "plan":
            return show_plan()
        if args.verb == "next":
            return next_call(ROOT, args.budget_s)
        if args.verb == "collect":
            return collect(ROOT, args.files_at)
        return publish()
    except ValueError as exc:
        print(f"gpu_campaign: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
