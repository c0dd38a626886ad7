"""`python -m harness identify FILE`: the Spec (convention) that reproduces a saved table.

Reads .npy, .npz (every array, or --key), .pt (torch.load, weights only: every tensor of a
state dict, or --key) and .csv; prints for each table the Spec, its amplitude when it is not
1, other readings of the same table, the libraries that use that convention and the max
error, or - exit code 1 - says that nothing matches and lists the nearest candidates.
--json prints one object keyed by the Spec's field names.
"""

from harness.identify.check import Candidate
from harness.identify.command import configure, main
from harness.identify.load import LoadedTable, from_array, load
from harness.identify.search import Identification, identify

__all__ = ["Candidate", "Identification", "LoadedTable", "configure", "from_array", "identify",
           "load", "main"]
