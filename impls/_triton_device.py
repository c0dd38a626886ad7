"""Where the Triton implementations run: a CUDA device, or the CPU under Triton's interpreter.

`TRITON_INTERPRET=1` makes every @triton.jit kernel run in Triton's own interpreter on tensors
in host memory. That is how a machine without a GPU checks the kernels' logic (`nox -s triton`):
the Triton implementations then register for, and place their tensors on, the CPU, so `list`
and verify's rows say where they ran. The interpreter is not the compiler (its float scalars,
libm and FMA contraction are NumPy's), so a GPU run must still verify them on the device; and it
computes bfloat16 arithmetic on the bit patterns, so a kernel that computes in bfloat16 (rather
than converting to float32 first, as the project's do) cannot be checked there in bfloat16.
"""

from __future__ import annotations

import os
from typing import Any, Optional

#: True when Triton runs kernels in its interpreter (read once: a process never switches).
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
#: The device the Triton implementations register for and allocate on.
DEVICE = "cpu" if INTERPRET else "cuda"


def interpreted_bfloat16(spec: Any) -> Optional[str]:
    """no bf16 math in the interpreter"""
    if INTERPRET and spec.dtype == "bfloat16":
        return ("Triton's interpreter does bfloat16 arithmetic on the raw bit patterns (it does not "
                "support it: triton-lang/triton#10945); a GPU run checks this case")
    return None
