"""The core: the kinds of table (specs, references, tolerances), the checks that judge an
implementation, the registry and plugins. Nothing here knows a verb."""

from harness.util import aliases as _aliases

#: The 1-D table's modules before it became a kind like the others: aliases for one release.
MOVED = {f"harness.core.{name}": f"harness.core.kinds.table.{name}"
         for name in ("spec", "reference", "tolerance", "cases", "conventions", "supports")}
_aliases.install(MOVED)
