"""Run-time device conditions for `register(check=...)`: None when usable, else why not."""

from __future__ import annotations

from typing import Any, Callable, Optional


def torch_cuda() -> Optional[str]:
    """torch sees a CUDA device (imports torch only when asked)."""
    import torch

    return None if torch.cuda.is_available() else "no CUDA device visible to torch"


def synchronized(fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    """`fn`, then a device sync on CUDA: a timed call must cover the kernels it launched."""
    if device != "cuda":
        return fn
    import torch

    def call() -> Any:
        out = fn()
        torch.cuda.synchronize()
        return out

    return call
