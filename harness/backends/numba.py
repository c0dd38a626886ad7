"""Numba on the CPU: returns NumPy arrays (NumPy converts and poisons them); its own pool."""

from harness.backends.base import Backend
from harness.backends.host import tracemalloc_peak


def pin_threads(threads: int) -> str:
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return f"numba threads={numba.get_num_threads()}"


BACKEND = Backend(name="numba", install="pip install 'pe-harness[numba]'", modules=("numba",),
                  distributions={"numba": ("numba",)}, pin_threads=pin_threads,
                  peak={"cpu": tracemalloc_peak}, jit=True, runtime_threads=True)
