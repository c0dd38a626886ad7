"""The core: the Spec, the reference and tolerance, the checks that judge an
implementation, the registry and plugins. Nothing here knows a verb."""
