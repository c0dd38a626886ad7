"""Where the Triton implementations run: a CUDA device, or the CPU under Triton's interpreter.

`TRITON_INTERPRET=1` makes every @triton.jit kernel run in Triton's own interpreter on tensors
in host memory. That is how a machine without a GPU checks the kernels' logic (`nox -s triton`):
the Triton implementations then register for, and place their tensors on, the CPU, so `list`
and verify's rows say where they ran. The interpreter is not the compiler (its float scalars,
libm and FMA contraction are NumPy's), so a GPU run must still verify them on the device.
"""

from __future__ import annotations

import os

#: True when Triton runs kernels in its interpreter (read once: a process never switches).
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
#: The device the Triton implementations register for and allocate on.
DEVICE = "cpu" if INTERPRET else "cuda"
