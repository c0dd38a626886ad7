"""The small verbs (verify, list, precision, conventions); bench, report and
identify are packages of their own beside this one."""

from harness.util import aliases as _aliases  # noqa: E402

#: The verbs' modules before each verb became one package: aliases for one release.
MOVED = {
    "harness.verbs.convention_matrix": "harness.verbs.conventions",
    "harness.verbs.family_conventions": "harness.verbs.conventions.each_kind",
    "harness.verbs.precision_methods": "harness.verbs.precision.methods",
    "harness.verbs.precision_family": "harness.verbs.precision",
    **{f"harness.verbs.precision_family.{name}": f"harness.verbs.precision.{name}"
       for name in ("common", "grid", "plots", "rotary", "rotary_apply", "sections", "studies",
                    "timestep", "verdicts", "runner")},
}
_aliases.install(MOVED)
