"""Where tasks run: in the driver (one job), in threads, on a local process pool, or on an existing dask.distributed
cluster (:func:`run` picks one). Each executor yields task results as they finish (completion order); the driver
(:mod:`gf01_formal.campaign.driver`) appends them at once.

- ``inline``: every task in the driver's own thread, in order.
- ``threads``: for agents that mostly wait on I/O (a model endpoint). The threads are daemons: on Ctrl-C or an
  error the driver does not wait for the episodes in flight (their records were never written, so the next run plays
  them), a stop flag keeps the threads from starting new tasks, and the external agents' programs of those episodes
  are killed with their children (every group this process holds: :func:`gf01_formal.workers.kill_groups`), since
  no thread will close them.
- ``local``: :func:`gf01_formal.workers.pool` (fresh interpreters that die with the driver, even on kill -9, and
  stop at once on Ctrl-C), with a bounded window of tasks in flight. A worker that dies (killed, out of memory)
  breaks a ``ProcessPoolExecutor``: the pool is then replaced and the tasks that had not returned are submitted
  again, each at most :data:`ALLOWED_FAILURES` times, as Dask does.
- ``dask://HOST:PORT``: a ``distributed.Client`` to the scheduler at that address (no cluster manager of ours);
  tasks go out with their shard keys, a bounded window at a time, and come back through ``as_completed``. Dask
  itself reruns the task of a worker that died (up to its ``allowed-failures``). Workers must have this version of
  gf01-formal installed; with the diagnostic on, one thread per worker process (its memory is metered per process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gf01_formal.campaign.shards import Result, Task, play_batch
from hoa.errors import Gf01Error

#: Times a task is resubmitted after its worker died, before the campaign gives up on it (Dask's default too).
ALLOWED_FAILURES = 3
#: Tasks in flight per worker: enough to keep every worker busy while results stream back.
WINDOW_PER_WORKER = 2


def parse_executor(text: str) -> tuple[str, str | None]:
    """``local``, ``threads`` or ``dask://HOST:PORT`` -> (kind, scheduler address).

    >>> parse_executor("dask://127.0.0.1:8786")
    ('dask', 'tcp://127.0.0.1:8786')
    """
    if text in ("local", "threads"):
        return text, None
    if text.startswith("dask://"):
        hostport = text[len("dask://"):]
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise Gf01Error(f"expected dask://HOST:PORT, got {text!r}", field="--executor")
        return "dask", f"tcp://{hostport}"
    raise Gf01Error(f"unknown executor {text!r} (local, threads or dask://HOST:PORT)", field="--executor")


#: The kinds of executor :func:`run` knows.
KINDS = ("inline", "threads", "local", "dask")


def run(tasks: Iterable[Task], kind: str, *, jobs: int = 1, address: str | None = None,
        one_thread: bool = False, on_pool: Callable[[list[int]], None] | None = None) -> Iterator[Result]:
    """The results of ``tasks`` on the executor ``kind`` (one of :data:`KINDS`; module docstring). ``threads`` and
    ``local`` with one job run inline; ``address`` is the Dask scheduler's, ``one_thread`` requires single-threaded
    Dask workers (the diagnostic meters memory per process)."""
    if kind == "dask":
        if address is None:
            raise Gf01Error("the dask executor needs a scheduler address (dask://HOST:PORT)", field="--executor")
        return run_dask(tasks, address, one_thread=one_thread)
    if kind not in KINDS:
        raise Gf01Error(f"unknown executor {kind!r} (one of {', '.join(KINDS)})", field="--executor")
    if kind == "inline" or jobs <= 1:
        return run_inline(tasks)
    if kind == "threads":
        return run_threads(tasks, jobs)
    return run_local(tasks, jobs, on_pool)


def run_inline(tasks: Iterable[Task]) -> Iterator[Result]:
    """Every task in this process, in order."""
    for task in tasks:
        yield play_batch(task)


def run_threads(tasks: Iterable[Task], jobs: int) -> Iterator[Result]:
    """Tasks on ``jobs`` daemon threads of this process (module docstring), results as they finish."""
    import queue
    import threading

    from gf01_formal.workers import kill_groups

    work: queue.SimpleQueue[Task] = queue.SimpleQueue()
    count = 0
    for task in tasks:
        work.put(task)
        count += 1
    results: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            try:
                task = work.get_nowait()
            except queue.Empty:
                break
            try:
                results.put(("result", play_batch(task)))
            except BaseException as ex:  # a user error (e.g. a refused key) stops the work in the driver
                results.put(("error", ex))
        results.put(("done", None))

    running = min(jobs, count)
    for i in range(running):
        threading.Thread(target=worker, daemon=True, name=f"gf01-play-{i}").start()
    try:
        while running:
            try:
                kind, value = results.get(timeout=0.2)  # a timed wait, so Ctrl-C is seen at once
            except queue.Empty:
                continue
            if kind == "done":
                running -= 1
            elif kind == "error":
                raise value
            else:
                yield value
    except BaseException:
        stop.set()
        kill_groups()
        raise
    finally:
        stop.set()


def run_local(tasks: Iterable[Task], jobs: int,
              on_pool: Callable[[list[int]], None] | None = None) -> Iterator[Result]:
    """Tasks on a pool of ``jobs`` processes (module docstring); ``on_pool`` gets each new pool's worker pids."""
    from concurrent.futures import FIRST_COMPLETED, Future, wait
    from concurrent.futures.process import BrokenProcessPool

    from gf01_formal.workers import kill, pool

    queue = iter(tasks)
    retry: list[Task] = []
    failures: dict[str, int] = {}
    exhausted = False
    while True:
        with pool(jobs) as ex:
            pending: dict[Future[Result], Task] = {}
            announced = False
            broken = False
            while True:
                while not broken and len(pending) < WINDOW_PER_WORKER * jobs:
                    task = retry.pop(0) if retry else (None if exhausted else next(queue, None))
                    if task is None:
                        exhausted = True
                        break
                    try:
                        pending[ex.submit(play_batch, task)] = task
                    except BrokenProcessPool:  # a worker died while we were away (e.g. appending results)
                        retry.insert(0, task)
                        broken = True
                if not announced and on_pool is not None:
                    on_pool(sorted(p.pid for p in (getattr(ex, "_processes", None) or {}).values()))
                    announced = True
                if not pending:
                    if broken:
                        break
                    return
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in sorted(finished, key=lambda f: pending[f].key):
                    task = pending.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        _count_failure(failures, task)
                        retry.append(task)
                        broken = True
                        continue
                    yield result
                if broken:
                    # Every task still in flight died with the pool: submit them again on a fresh one.
                    for task in sorted(pending.values(), key=lambda t: t.key):
                        _count_failure(failures, task)
                        retry.append(task)
                    pending.clear()
                    break
            kill(ex)


def _count_failure(failures: dict[str, int], task: Task) -> None:
    failures[task.key] = failures.get(task.key, 0) + 1
    if failures[task.key] > ALLOWED_FAILURES:
        raise Gf01Error(f"workers died {failures[task.key]} times on task {task.key}; giving up (the runs "
                        "finished so far are kept: run the campaign again to continue)")


def run_dask(tasks: Iterable[Task], address: str, *, one_thread: bool) -> Iterator[Result]:
    """Tasks on the dask.distributed cluster at ``address`` (module docstring)."""
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask[distributed] is a dependency
        raise Gf01Error("the dask executor needs dask[distributed] installed") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as ex:
        raise Gf01Error(f"cannot reach the Dask scheduler at {address}: {ex}", field="--executor") from None
    futures: list[Any] = []
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        if not workers:
            raise Gf01Error(f"the Dask cluster at {address} has no worker", field="--executor")
        threads = sum(w.get("nthreads", 1) for w in workers.values())
        if one_thread and any(w.get("nthreads", 1) != 1 for w in workers.values()):
            raise Gf01Error("the diagnostic meters memory per process: start the Dask workers with --nthreads 1",
                            field="--executor")
        window = WINDOW_PER_WORKER * max(1, threads)
        queue = iter(tasks)
        done = as_completed(loop=client.loop)
        for task in _take(queue, window):
            fut = client.submit(play_batch, task, key=task.key)
            futures.append(fut)
            done.add(fut)
        for fut in done:
            try:
                result = fut.result()
            except Gf01Error:
                raise
            except Exception as ex:  # KilledWorker, or our own failure raised on a worker
                raise Gf01Error(f"task {fut.key} failed on the cluster: {type(ex).__name__}: {ex}") from None
            futures.remove(fut)
            fut.release()
            yield result
            for task in _take(queue, 1):
                nxt = client.submit(play_batch, task, key=task.key)
                futures.append(nxt)
                done.add(nxt)
    finally:
        with contextlib.suppress(Exception):
            client.cancel(futures, force=True)
        with contextlib.suppress(Exception):
            client.close(timeout=1)


def _take(queue: Iterator[Task], n: int) -> list[Task]:
    out = []
    for _ in range(n):
        task = next(queue, None)
        if task is None:
            break
        out.append(task)
    return out
