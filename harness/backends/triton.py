"""Triton: kernels written in Python that run on torch tensors (so torch converts, measures
and captures them); a CUDA device is required."""

from harness.backends import torch as torch_backend
from harness.backends.base import Backend

BACKEND = Backend(
    name="triton", modules=("triton", "torch"), distributions={"triton": ("triton",)},
    peak={"cuda": torch_backend.cuda_peak}, cuda=torch_backend.cuda,
    capture=torch_backend.capture, inputs=torch_backend.inputs,
    jit=True,
)
