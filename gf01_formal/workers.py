"""Worker processes that never outlive their parent and stop at once on Ctrl-C.

A plain ``ProcessPoolExecutor`` leaves its workers running when the parent is killed (kill -9 leaves orphans that
finish their tasks), and on Ctrl-C every worker gets SIGINT too and the executor waits for running tasks. Here each
worker ignores SIGINT (the parent decides), asks the kernel to kill it when its parent dies (Linux
``PR_SET_PDEATHSIG``), and also watches its parent id (elsewhere, or if the parent died before the call); and the
parent, on any exception including KeyboardInterrupt, kills its workers instead of waiting for them. A worker is
started with SIGINT blocked (the executor starts workers inside ``submit``, which blocks it around the start), so a
Ctrl-C while a fresh interpreter is still importing does not print that interpreter's traceback.

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
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

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


class _Executor(ProcessPoolExecutor):
    """A process pool whose workers start with SIGINT blocked (see the module docstring)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with _sigint_held():
            return super().submit(fn, *args, **kwargs)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Run the block with SIGINT blocked and a Ctrl-C held back until it is done (then KeyboardInterrupt).

    The executor may start a worker in the block: the signal mask survives fork and exec, so the worker never sees
    SIGINT; and holding the parent's KeyboardInterrupt back keeps it from landing between the start of a worker
    and the write of its start-up data (the worker would die reading a truncated pipe, with a traceback).
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a SIGINT that came meanwhile is handled here...
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if caught:  # ... and raised once the block is done
        raise KeyboardInterrupt


@contextlib.contextmanager
def pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``jobs`` fresh interpreters (spawn) whose workers die with this process.

    Leaving the block normally waits for the workers; leaving it by an exception (KeyboardInterrupt included) kills
    them at once and cancels what was not started.
    """
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: nothing inherited from the parent
    ex = _Executor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),))
    try:
        yield ex
    except BaseException:
        kill(ex)
        raise
    ex.shutdown(wait=True)


def kill(ex: ProcessPoolExecutor) -> None:
    """Kill the workers of ``ex``, cancel pending work, and wait for the executor's own thread to finish.

    With its workers dead the executor's thread finds the pool broken and ends at once; waiting for it matters:
    left running, it closes its wake-up pipe while the interpreter's exit hook writes to it (a "Bad file
    descriptor" traceback at exit, CPython 3.11).
    """
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    ex.shutdown(wait=True, cancel_futures=True)
