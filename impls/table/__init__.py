"""The 1-D table's implementations, one module per backend (`<backend>_fast`: the angle-addition
designs, docs/fast.md; `library_conventions`: the lib-* re-derivations of real libraries)."""
