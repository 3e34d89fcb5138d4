"""numpy loaded with one OpenBLAS thread, for the console script's process and each pool worker.

The toolkit's numpy work is integer and bitwise, never BLAS, and OpenBLAS's worker threads spin for a while after the
import whatever the program does: about 90 ms of CPU on one small ``gf01 verify``, more than the query
(docs/performance.md, Front door), and about 0.03 s a pool worker (Test suite, eighth pass).
"""

from __future__ import annotations

import os
import sys


def load_numpy_single_threaded() -> None:
    """Import numpy with one OpenBLAS thread, unless the user chose a number or numpy is loaded already. The variable
    is read when the library loads and taken out again at once, so the programs the toolkit starts (an agent under
    evaluation) get the environment they were given.

    >>> load_numpy_single_threaded(); "numpy" in sys.modules
    True
    """
    if "OPENBLAS_NUM_THREADS" in os.environ or "numpy" in sys.modules:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401 - every command and task imports it; here, under the setting
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
