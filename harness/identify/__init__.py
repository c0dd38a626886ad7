"""`python -m harness identify FILE`: the spec (convention) that reproduces a saved table.

Reads .npy, .npz (every array, or --key), .pt/.pth/.bin (torch.load, weights only: every
tensor of a state dict, or --key), .safetensors, Keras .weights.h5 and .csv; prints for each
table the spec, its amplitude when it is not 1, other readings of the same table, the
libraries that use that convention and the max error, or - exit code 1 - says that nothing
matches and lists the nearest candidates. Besides 1-D tables it reads every other kind
(harness/identify/readers): a rotary cos/sin pair or an inv_freq vector, a ViT-style
grid `pos_embed` with its extra rows, a timestep embedding given its timesteps (--timesteps);
--kind forces one. --json prints one object: `kind` and the spec's field names, which
`harness.spec_from_dict` reads back.
"""

from harness.identify.check import Candidate
from harness.identify.command import JUDGE_APART, configure, main
from harness.identify.load import LoadedTable, from_array, load
from harness.identify.search import Identification, identify

__all__ = ["JUDGE_APART", "Candidate", "Identification", "LoadedTable", "configure", "from_array",
           "identify", "load", "main"]

from harness.util import aliases as _aliases  # noqa: E402

#: identify/family/ before it was named for what it holds: aliases for one release.
MOVED = {f"harness.identify.family{sub}": f"harness.identify.readers{sub}"
         for sub in ("", ".answer", ".dispatch", ".grid", ".rope_laws", ".rotary", ".timestep")}
_aliases.install(MOVED)
