"""Wrong implementations that verify must catch, each wrong in one believable way.

Each is a factory on top of one correct float64-angle NumPy builder, so a
passing control proves the failures come from the single mutation.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from harness import Spec, Supports
from harness.core.reference import column_plan
from harness.core.registry import Implementation
from harness.util.recycle import RecycledBuffers

INTERLEAVED_PAPER = Supports(layouts=("interleaved",))


def table(spec: Spec, pos: np.ndarray | None = None, base: float | None = None,
          angle_dtype=np.float64, order: str | None = None) -> np.ndarray:
    """A correct table, unless a mutation is asked for."""
    pos = np.arange(spec.offset, spec.offset + spec.length, dtype=np.float64) if pos is None else pos
    k = np.arange(spec.n_freq)
    inv = (spec.base if base is None else base) ** (-k / spec.denominator)
    with np.errstate(over="ignore", invalid="ignore"):  # float16 angles overflow past 65504
        theta = (pos[:, None] * inv).astype(angle_dtype)
        sin, cos = np.sin(theta).astype(np.float64), np.cos(theta).astype(np.float64)
    plan = column_plan(spec.replace(layout=order or spec.layout))
    out = np.zeros((spec.length, spec.d_model))
    out[:, plan.first_cols], out[:, plan.second_cols] = sin, cos
    return out.astype(spec.dtype)


def _correct(spec):
    return lambda: table(spec)


def _swapped(spec):
    return lambda: table(spec)[:, np.r_[1:spec.d_model:2, 0:spec.d_model:2]].reshape(
        spec.length, 2, -1).transpose(0, 2, 1).reshape(spec.length, -1)


def _off_by_one(spec):
    return lambda: table(spec, pos=np.arange(spec.length, dtype=np.float64) + spec.offset + 1)


def _concat_as_interleaved(spec):
    return lambda: table(spec, order="concat")


def _one_nan(spec):
    def call():
        out = table(spec)
        out[spec.length // 2, spec.d_model // 2] = np.nan
        return out
    return call


def _cached(spec):
    cached = table(spec)
    return lambda: cached


def _recycled_unwritten(spec):
    """Writes only into fresh memory: a buffer it gets back is returned as it was left."""
    buffers = RecycledBuffers((spec.length, spec.d_model), spec.dtype)
    written: set[int] = set()

    def call():
        out = buffers.take()
        if out.__array_interface__["data"][0] not in written:
            out[...] = table(spec)
            written.add(out.__array_interface__["data"][0])
        return out
    return call


def writes_twice(spec):
    """A recycler that writes only its first two results: the third caller gets a buffer back
    as the harness left it (poisoned)."""
    buffers, calls = RecycledBuffers((spec.length, spec.d_model), spec.dtype), []

    def call():
        calls.append(1)
        out = buffers.take()
        if len(calls) <= 2:
            out[...] = table(spec)
        return out
    return call


def _float16_angles(spec):
    return lambda: table(spec, angle_dtype=np.float16)


def _base_ignored(spec):
    return lambda: table(spec, base=10000.0)


def _last_column_wrong(spec):
    def call():
        out = table(spec)
        k = spec.n_freq - 2  # the previous frequency's cos
        theta = np.arange(spec.offset, spec.offset + spec.length) * spec.base ** (-k / spec.denominator)
        out[:, -1] = np.cos(theta)
        return out
    return call


def _drift_past_1000(spec):
    def call():
        pos = np.arange(spec.offset, spec.offset + spec.length, dtype=np.float64)
        pos = np.where(pos > 1000, pos * (1 + 2e-6), pos)
        return table(spec, pos=pos)
    return call


def _wrong_dtype(spec):
    return lambda: table(spec).astype(np.float64 if spec.dtype != "float64" else np.float32)


def _transposed(spec):
    return lambda: table(spec).T.copy()


WRONG: dict[str, Callable] = {
    "sin-cos-swapped": _swapped,
    "positions-off-by-one": _off_by_one,
    "concat-as-interleaved": _concat_as_interleaved,
    "one-nan": _one_nan,
    "cached-table": _cached,
    "recycled-unwritten": _recycled_unwritten,
    "float16-angles": _float16_angles,
    "base-ignored": _base_ignored,
    "last-column-wrong": _last_column_wrong,
    "drift-past-1000": _drift_past_1000,
    "wrong-dtype": _wrong_dtype,
    "transposed": _transposed,
}


# -- workloads with inputs, handed at every call (harness.core.handover) ---------------------

def first_forward(spec: Spec, once: bool = True):
    """x + PE; with `once`, computed on the first call only and handed back as a fresh copy ever
    after (right for the first inputs, timed as a memcpy): the cheat that call-time inputs
    catch. Without it, the honest control."""
    kept: list[np.ndarray] = []

    def forward(x):
        if not kept or not once:
            kept[:] = [(np.asarray(x, np.float64) + table(spec)[None]).astype(spec.dtype)]
        return kept[0].copy()
    return forward


def first_apply(spec, once: bool = True):
    """q and k rotated (float64, rounded once); with `once`, on the first call only and handed
    back as fresh copies ever after."""
    from harness.core.kinds.rotary.reference import apply_reference

    kept: list[tuple[np.ndarray, ...]] = []

    def apply(q, k, positions):
        if not kept or not once:
            rotated = apply_reference(spec, np.asarray(q, np.float64), np.asarray(k, np.float64),
                                      np.asarray(positions))
            kept[:] = [tuple(r.astype(spec.dtype) for r in rotated)]
        return tuple(r.copy() for r in kept[0])
    return apply


def keyed_forward(spec: Spec):
    """x + PE computed once per input object, a copy for the same object again: right for every
    new x (each of verify's calls gets one), a memcpy when bench times one x round after round."""
    kept: dict[int, tuple] = {}

    def forward(x):
        if id(x) not in kept:        # x kept too, so its id is never another's
            kept[id(x)] = (x, (np.asarray(x, np.float64) + table(spec)[None]).astype(spec.dtype))
        return kept[id(x)][1].copy()
    return forward


def built_forward(spec: Spec, x: np.ndarray):
    """The same cheat in the deprecated build-time form: x + PE computed in the factory, a fresh
    copy per call."""
    answer = (x.astype(np.float64) + table(spec)[None]).astype(spec.dtype)
    return lambda: answer.copy()


def with_inputs(name: str, build: Callable, workload: str = "forward") -> Implementation:
    return Implementation(name=name, backend="numpy", device="cpu", build=build,
                          supports_fn=INTERLEAVED_PAPER if workload == "forward" else _any,
                          workload=workload, kind="table" if workload == "forward" else "rotary",
                          origin=__name__)


def _any(spec) -> None:
    return None


def implementation(name: str) -> Implementation:
    build = _correct if name == "control" else WRONG[name]
    return Implementation(name=f"wrong-{name}", backend="numpy", device="cpu", build=build,
                          supports_fn=INTERLEAVED_PAPER, origin=__name__)
