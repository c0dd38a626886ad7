"""TensorFlow: the rotary cache as model code builds it, a fast cache, and HF's apply, eager.

The same formulas as NumPy and torch (impls/rotary/_model.py) in tf ops; TF tensors are
immutable, so each call returns new ones.
"""

from __future__ import annotations

from ._model import register_model_code, tf_ops
from ._supports import EVERY_SPEC

register_model_code("rotary-tf", "tensorflow", tf_ops, EVERY_SPEC, __name__, " in tf ops")
