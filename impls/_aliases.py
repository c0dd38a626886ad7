"""The modules' names before impls/ was sorted by kind: aliases for one release.

`harness.impls.numpy_impls` and the rest keep importing (as the same module object, so a
monkeypatch on either name is seen by both; imported on first use); new code names `harness.impls.<kind>.<backend>`.
"""

from __future__ import annotations

from harness.util import aliases

#: old module name under harness.impls -> its home now, under harness.impls unless named in full
OLD_NAMES = {
    "_assemble": "table._assemble", "_device_columns": "table._device_columns",
    "fast_tables": "table._angle_addition", "python_impls": "table.python",
    "numpy_impls": "table.numpy", "fast_numpy": "table.numpy_fast", "torch_impls": "table.torch",
    "fast_torch": "table.torch_fast", "tensorflow_impls": "table.tensorflow",
    "fast_tensorflow": "table.tensorflow_fast", "numba_impls": "table.numba",
    "fast_numba": "table.numba_fast", "jax_impls": "table.jax", "cupy_impls": "table.cupy",
    "numba_cuda_impls": "table.numba_cuda", "triton_impls": "table.triton",
    "library_conventions": "table.library_conventions",
    "_rotary_kernels": "rotary._kernels", "_rotary_model": "rotary._model",
    "_rotary_support": "rotary._supports", "_rotary_tables": "rotary._tables",
    "_triton_rotary_kernels": "rotary._triton_kernels", "rotary_numba": "rotary.numba",
    "rotary_numpy": "rotary.numpy", "rotary_python": "rotary.python",
    "rotary_tensorflow": "rotary.tensorflow", "rotary_torch": "rotary.torch",
    "triton_rotary": "rotary.triton",
    "_grid_assemble": "grid._assemble", "_grid_axes": "grid._axes", "_grid_support": "harness.core.kinds.grid.supports",
    "grid_numba": "grid.numba", "grid_numpy": "grid.numpy", "grid_python": "grid.python",
    "grid_tensorflow": "grid.tensorflow", "grid_torch": "grid.torch",
    "timestep_numba": "timestep.numba", "timestep_numpy": "timestep.numpy",
    "timestep_python": "timestep.python", "timestep_tensorflow": "timestep.tensorflow",
    "timestep_torch": "timestep.torch",
    "libraries.keras_hub_impls": "libraries.keras_hub",
    "libraries.x_transformers_impls": "libraries.x_transformers",
}


def install(package: str) -> None:
    """Let each old name under `package` import as its new module."""
    aliases.install({f"{package}.{old}": new if new.startswith("harness.") else f"{package}.{new}"
                     for old, new in OLD_NAMES.items()})
