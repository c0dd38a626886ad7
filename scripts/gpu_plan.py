"""The GPU campaign's plan: its steps, what each carries, and where a rerun resumes.

A GPU is lent for ~15 minutes of device time (its start included), in calls of at most 10 minutes, to a machine with
no network that gets the repository's working tree plus at most 64 MiB in all. So the campaign
is a list of `Step`s, each a few harness or pytest commands that end inside one call, and a
`State` (`.gpu-campaign/state.json`) that travels with every call and comes back after it: a
rerun of the same command runs the steps not yet done. A bench step that its call cuts short
(`bench --budget-s`, or the call's own limit) is resumed by the next call from its journal
(`bench --resume`), so no timed cell is lost or timed twice. Nothing here touches a GPU; the
device side is scripts/gpu_campaign.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

#: Everything under the working tree the device machine gets, carried paths included.
CARRY_LIMIT = 64 * 2**20
#: One call's command time (10 minutes), less a margin for the install and the packing.
CALL_BUDGET_S = 540
#: What a bench keeps of its call's time to end well (bench.csv, its workers) before the
#: call's own limit would stop it.
BENCH_END_S = 45
#: The folder (ignored by git, carried to every call) holding the state and the steps' outputs.
STATE_DIR = ".gpu-campaign"
#: The folder (ignored by git, carried) holding the wheels and sources the device machine lacks.
WHEELS_DIR = ".gpu-wheels"

#: The GPU implementations: the project's and the library kernels (docs/gpu.md).
#: The Triton kernels, the project's and the libraries'; then the other CUDA implementations.
KERNELS = ("triton-*", "liger-*", "flash-attn-*", "xformers-*", "*-compiled")
CUDA = ("*cuda*", "cupy*")
DEVICE_IMPLS = KERNELS + CUDA
#: tritonbench's rope shapes and Liger's Llama-3-8B: batch 1, 32 q heads and 8 kv heads,
#: sequence first (the form every library kernel takes), head_dim 128.
#: --max-elements: q at 16384 x 32 heads x 128 is 2^26 elements, which the CPU's default cap
#: (sized for host memory and time) left out of the first H200 run without a row.
APPLY_SHAPE = ("--workloads", "apply", "--batch", "1", "--heads", "32", "--convention", "gqa8-bshd",
               "--max-elements", str(2**26))
#: sync (each call waited for) and graph (calls replayed from a CUDA graph: the kernels alone);
#: flush (L2 emptied between calls) waits for a longer lease.
HALF_AND_FULL = ("--device-dtypes", "bfloat16,float16,float32", "--modes", "sync,graph")


def _only(patterns: Iterable[str]) -> tuple[str, ...]:
    return tuple(arg for pattern in patterns for arg in ("--only", pattern))


@dataclass(frozen=True)
class Step:
    """One resumable piece of the campaign.

    `commands` run in order from the repository root (`{state}` is replaced by the state
    folder); `bench` names the bench options of a bench step, whose run directory is
    `{state}/<name>` and which a later call resumes; `estimate_s` is what the step is expected
    to take, so a call does not start a step that cannot end in it."""

    name: str
    estimate_s: int
    commands: tuple[tuple[str, ...], ...] = ()
    bench: tuple[str, ...] = ()
    why: str = ""
    #: run with the carried NumPy ahead of the image's (numba-cuda needs it; nothing else does)
    carried_numpy: bool = False

    def argv(self, state: Path, resume: bool, budget_s: float) -> list[list[str]]:
        """The commands of this step's next run; `resume`: its bench has a journal to finish,
        and the commands before it ran in an earlier call."""
        fill = [[a.replace("{state}", str(state)) for a in command] for command in self.commands]
        if not self.bench:
            return fill
        if resume:
            fill = []
        bench = ["python3", "-m", "harness", "bench", *self.bench, "--out", str(state / self.name),
                 "--no-post", "--budget-s", f"{max(budget_s - BENCH_END_S, 1):.0f}"]
        return fill + [bench + (["--resume"] if resume else [])]


STEPS = (
    Step("verify", 240, commands=(
        ("python3", "-m", "harness", "list", "--json", *_only(DEVICE_IMPLS)),
        ("python3", "-m", "harness", "verify", *_only(DEVICE_IMPLS), "--timeout-s", "60",
         "--random", "2", "--out", "{state}/verify"),),
         why="every GPU implementation, the project's and the libraries', against the float64 "
             "reference"),
    Step("apply-long", 270, bench=(*_only(DEVICE_IMPLS), *APPLY_SHAPE, *HALF_AND_FULL,
                                   "--lengths", "1024,4096,16384", "--d-models", "128"),
         why="rotary apply at tritonbench's sequence sweep and Liger's Llama-3-8B shapes"),
    Step("tests", 150, commands=(
        ("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "--junitxml={state}/tests/junit.xml", "tests/test_gpu.py", "tests/test_triton_rotary.py",
         "tests/test_triton_libraries.py", "tests/test_device_timing.py"),),
         why="the tests that need a GPU, and the Triton kernels' tests on it"),
    Step("family", 300, bench=(*_only(DEVICE_IMPLS), "--quick", "--workloads",
                               "table,forward,cache,grid,timestep"),
         why="the rest of the family on the device: tables, caches, grids, timesteps"),
    Step("apply-head-dims", 240, bench=(*_only(DEVICE_IMPLS), *APPLY_SHAPE, *HALF_AND_FULL,
                                        "--lengths", "2048", "--d-models", "16,64,256"),
         why="rotary apply at tritonbench's head_dim sweep"),
    Step("numba-cuda", 120, commands=(
        ("python3", "-m", "harness", "verify", "--only", "numba-cuda-*", "--timeout-s", "60",
         "--out", "{state}/numba-cuda/verify"),),
         bench=("--only", "numba-cuda-*", "--quick"), carried_numpy=True,
         why="numba-cuda-table under the NumPy its 0.30.4 loads with (the image's 2.5.2 breaks it)"),
    Step("tune", 300, commands=(
        ("python3", "scripts/tune_triton_rotary.py", "{state}/tune/tiles.csv",
         "--dtypes", "bfloat16"),),
         why="the project's Triton apply over its tiles at those shapes, beside the device copy"),
)


@dataclass
class State:
    """Which steps are done, and which bench steps have a run to resume."""

    done: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    log: list[dict] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path) -> "State":
        path = folder / "state.json"
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text())
        return cls(list(data.get("done", [])), list(data.get("started", [])),
                   list(data.get("log", [])))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "state.json").write_text(json.dumps(
            {"done": self.done, "started": self.started, "log": self.log}, indent=1) + "\n")

    def pending(self, steps: Iterable[Step] = STEPS) -> list[Step]:
        return [s for s in steps if s.name not in self.done]

    def record(self, step: Step, outcome: str, seconds: float, finished: bool) -> None:
        """Log one run of a step; a finished one is done, any other may be resumed."""
        self.log.append({"step": step.name, "outcome": outcome, "seconds": round(seconds, 1)})
        if step.name not in self.started:
            self.started.append(step.name)
        if finished and step.name not in self.done:
            self.done.append(step.name)


def next_steps(state: State, budget_s: float, steps: Iterable[Step] = STEPS) -> list[Step]:
    """The pending steps, in order, that this call starts: those whose estimate fits the budget
    left, and always the first (a step longer than a call still advances, then resumes)."""
    chosen, left = [], budget_s
    for step in state.pending(steps):
        if chosen and step.estimate_s > left:
            break
        chosen.append(step)
        left -= step.estimate_s
    return chosen


def unfinished_cells(journal: Path, budget_prefix: str) -> int:
    """Cells of a bench journal whose last row is a skip for the sweep's budget (--resume runs
    them); 0 for a complete run."""
    if not journal.is_file():
        return 0
    last: dict[str, dict] = {}
    for line in journal.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            last[row.get("key", "")] = row
    return sum(1 for row in last.values() if row.get("status") == "skip"
               and str(row.get("reason", "")).startswith(budget_prefix))


def tree_bytes(tracked: Iterable[int], carried: Iterable[int]) -> int:
    """What one call moves: the working tree's files and the carried ones."""
    return sum(tracked) + sum(carried)


def carry_problem(total: int, limit: int = CARRY_LIMIT) -> Optional[str]:
    """None when `total` bytes fit one call, else by how much they do not."""
    if total <= limit:
        return None
    return (f"the working tree and the carried folders are {total / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB a call moves: carry fewer wheels")
