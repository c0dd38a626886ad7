"""Run-time device conditions for `register(check=...)`: None when usable, else why not."""

from __future__ import annotations

from typing import Optional


def torch_cuda() -> Optional[str]:
    """torch sees a CUDA device (imports torch only when asked)."""
    import torch

    return None if torch.cuda.is_available() else "no CUDA device visible to torch"
