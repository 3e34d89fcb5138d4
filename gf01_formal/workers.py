"""Worker processes that never outlive their parent and stop at once on Ctrl-C.

A plain ``ProcessPoolExecutor`` leaves its workers running when the parent is killed (kill -9 leaves orphans that
finish their tasks), and on Ctrl-C every worker gets SIGINT too and the executor waits for running tasks. Here each
worker ignores SIGINT (the parent decides), asks the kernel to kill it when its parent dies (Linux
``PR_SET_PDEATHSIG``), and also watches its parent id (elsewhere, or if the parent died before the call); and the
parent, on any exception including KeyboardInterrupt, kills its workers instead of waiting for them.

>>> with pool(2) as ex:  # doctest: +SKIP
...     results = [f.result() for f in [ex.submit(pow, 2, 10)]]
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

#: How often a worker checks that its parent is alive (seconds), where the kernel cannot do it for it.
WATCH_SECONDS = 0.5


def _init_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="gf01-parent-watch").start()


def _watch(parent: int) -> None:
    while True:
        time.sleep(WATCH_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


@contextlib.contextmanager
def pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``jobs`` fresh interpreters (spawn) whose workers die with this process.

    Leaving the block normally waits for the workers; leaving it by an exception (KeyboardInterrupt included) kills
    them at once and cancels what was not started.
    """
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: nothing inherited from the parent
    ex = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),))
    try:
        yield ex
    except BaseException:
        kill(ex)
        raise
    ex.shutdown(wait=True)


def kill(ex: ProcessPoolExecutor) -> None:
    """Kill the workers of ``ex`` and reap them; cancel pending work."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(timeout=2)
