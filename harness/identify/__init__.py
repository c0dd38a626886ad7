"""`python -m harness identify FILE`: the Spec (convention) that reproduces a saved table.

Reads .npy, .npz (first array or --key), .pt (torch.load, weights only) and
.csv; prints the Spec, the libraries that use that convention and the max
error, or - exit code 1 - says that nothing matches and lists the nearest
candidates. --json prints one object keyed by the Spec's field names.
"""

from harness.identify.command import configure, main
from harness.identify.load import LoadedTable, from_array, load
from harness.identify.search import Candidate, Identification, identify

__all__ = ["Candidate", "Identification", "LoadedTable", "configure", "from_array", "identify",
           "load", "main"]
