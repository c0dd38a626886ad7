"""Every kind's precision studies, gathered from the kinds registry (`Kind.studies` names the
modules whose `STUDIES` measure a kind), in the kinds' order.

One place lists them, so the child processes, the markdown and the plots agree on the set.
"""

from __future__ import annotations

import importlib

from harness.core import kinds
from harness.verbs.precision.study import Study


def _gathered() -> tuple[Study, ...]:
    return tuple(study for kind in sorted(kinds.KINDS.values(), key=lambda k: k.order)
                 for module in kind.studies for study in importlib.import_module(module).STUDIES)


STUDIES: tuple[Study, ...] = _gathered()
#: the kinds with studies, in order
KINDS: tuple[str, ...] = tuple(dict.fromkeys(s.kind for s in STUDIES))


def of_kind(kind: str) -> tuple[Study, ...]:
    return tuple(s for s in STUDIES if s.kind == kind)


def named(kind: str, name: str) -> Study:
    return next(s for s in STUDIES if (s.kind, s.name) == (kind, name))


__all__ = ["KINDS", "STUDIES", "Study", "named", "of_kind"]
