"""The family's studies: which module measures which probes, and how each is titled and read.

One place names them, so the child processes, the markdown and the plots agree on the set.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.verbs.precision import grid, rotary, rotary_apply, timestep
from harness.verbs.precision.common import log_starts
from harness.verbs.precision.verdicts import Axis

KINDS = ("rotary", "timestep", "grid")


@dataclass(frozen=True)
class Study:
    kind: str
    name: str                       # the `study` column
    module: str                     # its `measure(probes)` makes the points
    probes: tuple[float, ...]
    probes_quick: tuple[float, ...]
    title: str
    axis: Axis
    shown: tuple[float, ...]        # the probes the summary table shows
    note: str
    choose_by: str = "dtype"        # verdicts.choices: one choice per dtype, or per "config"


ROTARY_STARTS = tuple(log_starts(rotary.LAST_POSITION, 2))
ROTARY_STARTS_QUICK = tuple(log_starts(rotary.LAST_POSITION, 1))
ROTARY_SHOWN = (128, 256, 2048, 65_536, 1_048_576)
_ROTARY = "harness.verbs.precision."

STUDIES: tuple[Study, ...] = (
    Study("rotary", "cache", _ROTARY + "rotary", ROTARY_STARTS, ROTARY_STARTS_QUICK,
          "Rotary cos/sin cache", Axis("position", rotary.WINDOW - 1), ROTARY_SHOWN,
          f"Largest |error| of cos and sin against the float64 reference over {rotary.WINDOW} "
          f"consecutive positions starting at p, head_dim {rotary.HEAD_DIM}, base 10000, "
          "default rope_type; dtype is the dtype the cache is stored in. Methods: "
          "harness/verbs/precision/rotary.py."),
    Study("rotary", "rope_type", _ROTARY + "rotary", ROTARY_STARTS, ROTARY_STARTS_QUICK,
          "Rotary cache by rope_type", Axis("position", rotary.WINDOW - 1), ROTARY_SHOWN,
          "The same probes for every rope_type (configs in ROPE_CONFIGS of "
          "harness/verbs/precision/rotary.py: linear x8, dynamic x8 over 4096, yarn x16 "
          "over 4096, llama3 x8 over 8192, longrope x32 over 4096), float32 cache, computed with "
          "float32 angles and with reduced float64 angles. Scaling that divides a frequency "
          "makes its angles, and so their rounding, smaller; the largest error comes from the "
          "fastest frequencies, which yarn and llama3 leave alone.", choose_by="config"),
    Study("rotary", "apply", _ROTARY + "rotary_apply", ROTARY_STARTS, ROTARY_STARTS_QUICK,
          "Rotary apply in bfloat16", Axis("position", rotary.WINDOW - 1), ROTARY_SHOWN,
          f"q and k [{rotary_apply.BATCH}, {rotary_apply.HEADS}, {rotary.WINDOW}, "
          f"{rotary.HEAD_DIM}] (exact in bfloat16) rotated at positions p .. p + "
          f"{rotary.WINDOW - 1}, result in bfloat16; largest |error| / max(|exact|, 1) against "
          "the float64 rotation by the exact cache. Methods: "
          "harness/verbs/precision/rotary_apply.py."),
    Study("timestep", "embedding", _ROTARY + "timestep", timestep.STARTS, timestep.STARTS_QUICK,
          "Timestep embedding", Axis("t", (timestep.WINDOW - 1) / timestep.WINDOW),
          (0, 64, 256, 999),
          f"Largest |error| against the float64 reference over the timesteps t0 + j/"
          f"{timestep.WINDOW}, j < {timestep.WINDOW} (a DDPM step and fractional ones), of a "
          f"Stable Diffusion embedding (dim {timestep.DIM}, max_period 10000, freq_shift 0, cos "
          "first); dtype is the dtype the embedding is stored in. Methods: "
          "harness/verbs/precision/timestep.py."),
    Study("grid", "grid", _ROTARY + "grid", grid.SIDES, grid.SIDES_QUICK,
          "2-D sincos grid", Axis("side"), (16, 64, 256),
          f"Largest |error| against the float64 reference over a whole side x side MAE-style "
          f"table (d_model {grid.D_MODEL}, base 10000, x first). Methods: "
          "harness/verbs/precision/grid.py."),
)


def of_kind(kind: str) -> tuple[Study, ...]:
    return tuple(s for s in STUDIES if s.kind == kind)


def named(kind: str, name: str) -> Study:
    return next(s for s in STUDIES if (s.kind, s.name) == (kind, name))
