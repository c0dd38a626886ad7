"""Built-in implementations, one module per backend.

Importing this package registers them all. No module here imports its
backend at import time: each factory imports what it needs, so a missing
backend makes its implementations unavailable, not the package unimportable.
"""

from impls import (cupy_impls, fast_numba, fast_numpy, fast_tensorflow,  # noqa: F401  (imported to register)
                   fast_torch, jax_impls, library_conventions, numba_cuda_impls, numba_impls, numpy_impls,
                   python_impls, tensorflow_impls, torch_impls, triton_impls)
