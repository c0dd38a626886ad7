"""The real library functions, called the way a user calls them, verified and timed.

`impls/table/library_conventions.py` re-derives each library's formula in NumPy: it proves the
mapping onto a spec but times nothing a user runs. Here each implementation imports the
library and calls its public function or module (construction, weights and device transfer in
the factory, the call a forward pass runs in the callable), named after whose code runs and
registered with `library=<distribution>`, so `list` prints the version verify judged. A
library that is not installed only makes its implementations unavailable (see docs/libraries.md
and the `libraries` extra).
"""
