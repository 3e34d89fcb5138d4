"""Worker processes, and the programs they start, that never outlive their parent and stop at once on Ctrl-C.

A plain ``ProcessPoolExecutor`` leaves its workers running when the parent is killed (kill -9 leaves orphans that
finish their tasks), and on Ctrl-C every worker gets SIGINT too and the executor waits for running tasks. Here each
worker ignores SIGINT (the parent decides), asks the kernel to kill it when its parent dies (Linux
``PR_SET_PDEATHSIG``, :func:`solvers.limits.die_with_parent`), and also watches its parent id (elsewhere, or if the
parent died before the call); and the parent, on any exception including KeyboardInterrupt, kills its workers
instead of waiting for them. A worker is started with SIGINT blocked (the executor starts workers inside ``submit``,
which blocks it around the start), so a Ctrl-C while a fresh interpreter is still importing does not print that
interpreter's traceback.

Programs a process starts in process groups of their own (external agents) use the same death signal, and are
registered with :func:`hold_group`: while it holds one, a SIGTERM to the process (which is how :func:`kill` stops a
worker), or its exit, first SIGKILLs those groups, so the programs' own children end too.

>>> with pool(2) as ex:
...     [f.result() for f in [ex.submit(pow, 2, 10)]]
[1024]
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.connection import wait as wait_ready
from typing import Any

from gf01_formal.blas import load_numpy_single_threaded

#: How often a worker checks that its parent is alive (seconds), where the kernel cannot do it for it.
WATCH_SECONDS = 0.5
#: Seconds :func:`kill` gives its workers, after SIGTERM, to end the program groups they hold before SIGKILL.
TERM_SECONDS = 0.25
#: Seconds :func:`kill` waits for the executor's own thread to finish once the workers are dead.
JOIN_SECONDS = 1.0
#: Seconds :func:`reap_tracker` waits for the resource tracker to end once its pipe is closed.
REAP_SECONDS = 0.5


def _init_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # kill() stops a worker by SIGTERM: not ignored, even if inherited
    # Every task a worker runs imports the solvers: numpy first, with one OpenBLAS thread (gf01_formal.blas). This
    # module imports no numpy itself, so the worker's unpickling of this initializer does not load it first.
    load_numpy_single_threaded()
    from solvers.limits import die_with_parent  # the solver layer, numpy behind it: loaded by now

    die_with_parent(parent)
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
    them at once and cancels what was not started. A SIGTERM to this process meanwhile first stops the workers
    as :func:`kill` does (so they end the program groups they hold), then takes its course.
    """
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: nothing inherited from the parent
    ex = _Executor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),))
    unhook = _on_sigterm(lambda: _terminate(ex))
    try:
        yield ex
    except BaseException:
        kill(ex)
        raise
    finally:
        unhook()
    ex.shutdown(wait=True)


def kill(ex: ProcessPoolExecutor) -> None:
    """Kill the workers of ``ex``, cancel pending work, and wait (at most :data:`JOIN_SECONDS`) for the executor's
    own thread to finish.

    The workers get SIGTERM first, and up to :data:`TERM_SECONDS` to die of it (:func:`_terminate`); then SIGKILL
    for any left. With its workers dead the executor's thread finds the pool broken and ends at once; waiting for
    it matters: left running, it closes its wake-up pipe while the interpreter's exit hook writes to it (a "Bad file
    descriptor" traceback at exit, CPython 3.11).
    """
    for p in _terminate(ex):
        with contextlib.suppress(Exception):
            p.kill()
    # The work queued for dead workers is void: its feeder thread must not be waited for (blocked on a full pipe
    # that nobody reads, it would hold the executor's thread, and so this shutdown, for ever).
    queue = getattr(ex, "_call_queue", None)
    if queue is not None:
        with contextlib.suppress(Exception):
            queue.cancel_join_thread()
    ex.shutdown(wait=False, cancel_futures=True)
    thread = getattr(ex, "_executor_manager_thread", None)
    if thread is not None:
        thread.join(JOIN_SECONDS)  # bounded: a stop must end within 2 s whatever the executor's thread does


def _terminate(ex: ProcessPoolExecutor) -> list[Any]:
    """SIGTERM the workers of ``ex`` and wait up to :data:`TERM_SECONDS` for them to die; returns the workers.

    A worker holding program groups (:func:`hold_group`) SIGKILLs them on SIGTERM, then dies of it; the others
    die of it at once.
    """
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    sentinels = []
    for p in procs:
        with contextlib.suppress(Exception):  # closed already: nothing to wait for
            sentinels.append(p.sentinel)
    deadline = time.monotonic() + TERM_SECONDS
    while sentinels and (left := deadline - time.monotonic()) > 0:
        try:
            ready = wait_ready(sentinels, left)
        except (OSError, ValueError):  # the executor's thread closed one meanwhile: the workers are going
            break
        sentinels = [s for s in sentinels if s not in ready]
    return procs


# -- program groups that end with this process ---------------------------------------------------------------------

_held: set[int] = set()
_unhook: Callable[[], bool] | None = None  # removes the SIGTERM handler hold_group installed
_kills = 0  # how many times kill_groups ran
_exiting = False  # the interpreter is exiting: a group held from now on is killed at once


def kills() -> int:
    """How many times the held groups were killed so far: take it before starting a program, for
    :func:`hold_group`'s ``since``."""
    return _kills


def hold_group(pgid: int, *, since: int | None = None) -> None:
    """Register process group ``pgid`` (a program this process started in a session of its own) to be SIGKILLed
    when this process gets SIGTERM or exits, or :func:`kill_groups` is called, until :func:`release_group`.

    ``since``: :func:`kills` taken before the program was started. If the groups were killed since then (another
    thread was stopping the work while this one started a program), or the interpreter is exiting, the group is
    killed at once: no program started during a stop outlives it.

    The SIGTERM handler is installed only while a group is held, and only by a call from the main thread (where
    Python allows it): a process holding nothing keeps dying of SIGTERM at once, even inside a long C call.
    """
    global _unhook
    _held.add(pgid)
    if _exiting or (since is not None and since != _kills):
        _kill_group(pgid)
    if _unhook is None and threading.current_thread() is threading.main_thread():
        _unhook = _on_sigterm(kill_groups)


def release_group(pgid: int) -> None:
    """Forget process group ``pgid`` (it was ended); the last release removes the SIGTERM handler."""
    global _unhook
    _held.discard(pgid)
    if not _held and _unhook is not None and _unhook():
        _unhook = None


def kill_groups() -> None:
    """SIGKILL every process group this process holds (:func:`hold_group`); gone already is fine."""
    global _kills
    _kills += 1  # first: a program being started meanwhile is then killed by its hold_group
    for pgid in list(_held):
        _kill_group(pgid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@atexit.register
def _at_exit() -> None:
    """At exit the groups still held are the programs of threads no one will join (daemons): kill them rather
    than leave their children to outlive us (the parent-death signal reaches the programs only)."""
    global _exiting
    _exiting = True
    kill_groups()


def _on_sigterm(action: Callable[[], object]) -> Callable[[], bool]:
    """Install a SIGTERM handler that runs ``action``, then hands the signal on: to the handler it replaced, or
    dying of it as by default. Returns the function that removes it again (true when it did, or had nothing to do).

    Nothing is installed off the main thread (Python only lets that thread set handlers) or when SIGTERM is
    ignored (the process is not stopped by it, so nothing needs doing first).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: True
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return lambda: True
    if previous is None:  # a handler not set from Python: the best that can be put back is the default
        previous = signal.SIG_DFL

    def handler(signum: int, frame: Any) -> None:
        action()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)

    def unhook() -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        if signal.getsignal(signal.SIGTERM) is handler:  # not replaced meanwhile (else it stays in that chain)
            signal.signal(signal.SIGTERM, previous)
        return True

    return unhook


def reap_tracker() -> None:
    """Stop and reap multiprocessing's resource tracker, if this process started one (a spawn pool does).

    The tracker outlives its parent by design: it ends when the parent's end of its pipe closes, at exit, and is then
    reaped by init. Where process 1 does not reap (some container and VM inits), it stays as a zombie, a child left
    behind. Called last thing before a command exits, once the pools are gone (their semaphores unregistered).
    """
    import sys

    tracker_module = sys.modules.get("multiprocessing.resource_tracker")
    if tracker_module is None:
        return
    tracker = tracker_module._resource_tracker
    if getattr(tracker, "_pid", None) is None:
        return
    import gc

    gc.collect()  # finalise dead pools' semaphores now: an unregister after the stop would start a new tracker
    with contextlib.suppress(Exception), tracker._lock:
        # What ResourceTracker._stop does, with the wait bounded: closing its pipe ends the tracker at once, and an
        # exit (a Ctrl-C's above all) must not hang on it.
        if tracker._fd is None:
            return
        os.close(tracker._fd)
        tracker._fd = None
        pid, tracker._pid = tracker._pid, None
        deadline = time.monotonic() + REAP_SECONDS
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.005)

