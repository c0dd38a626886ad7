"""Pure Python: nothing to import, no thread pool; its lists are measured by tracemalloc."""

from harness.backends.base import Backend
from harness.backends.host import tracemalloc_peak

BACKEND = Backend(name="python", peak={"cpu": tracemalloc_peak}, threaded=False)
