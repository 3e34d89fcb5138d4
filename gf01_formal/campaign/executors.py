"""Where a campaign's tasks run: in the driver (one job), on a local process pool, or on an existing dask.distributed
cluster. Each executor yields task results as they finish (completion order); the driver appends them at once.

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

from gf01_formal.campaign.shards import Result, play_batch
from hoa.errors import Gf01Error

#: Times a task is resubmitted after its worker died, before the campaign gives up on it (Dask's default too).
ALLOWED_FAILURES = 3
#: Tasks in flight per worker: enough to keep every worker busy while results stream back.
WINDOW_PER_WORKER = 2


def parse_executor(text: str) -> tuple[str, str | None]:
    """``local`` or ``dask://HOST:PORT`` -> (kind, scheduler address)."""
    if text == "local":
        return "local", None
    if text.startswith("dask://"):
        hostport = text[len("dask://"):]
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise Gf01Error(f"expected dask://HOST:PORT, got {text!r}", field="--executor")
        return "dask", f"tcp://{hostport}"
    raise Gf01Error(f"unknown executor {text!r} (local or dask://HOST:PORT)", field="--executor")


def run_inline(tasks: Iterable[dict[str, Any]]) -> Iterator[Result]:
    """Every task in this process, in order."""
    for task in tasks:
        yield play_batch(task)


def run_local(tasks: Iterable[dict[str, Any]], jobs: int,
              on_pool: Callable[[list[int]], None] | None = None) -> Iterator[Result]:
    """Tasks on a pool of ``jobs`` processes (module docstring); ``on_pool`` gets each new pool's worker pids."""
    from concurrent.futures import FIRST_COMPLETED, Future, wait
    from concurrent.futures.process import BrokenProcessPool

    from gf01_formal.workers import kill, pool

    queue = iter(tasks)
    retry: list[dict[str, Any]] = []
    failures: dict[str, int] = {}
    exhausted = False
    while True:
        with pool(jobs) as ex:
            pending: dict[Future[Result], dict[str, Any]] = {}
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
                for fut in sorted(finished, key=lambda f: pending[f]["key"]):
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
                    for task in sorted(pending.values(), key=lambda t: t["key"]):
                        _count_failure(failures, task)
                        retry.append(task)
                    pending.clear()
                    break
            kill(ex)


def _count_failure(failures: dict[str, int], task: dict[str, Any]) -> None:
    failures[task["key"]] = failures.get(task["key"], 0) + 1
    if failures[task["key"]] > ALLOWED_FAILURES:
        raise Gf01Error(f"workers died {failures[task['key']]} times on task {task['key']}; giving up (the runs "
                        "finished so far are kept: run the campaign again to continue)")


def run_dask(tasks: Iterable[dict[str, Any]], address: str, *, one_thread: bool) -> Iterator[Result]:
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
            fut = client.submit(play_batch, task, key=task["key"])
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
                nxt = client.submit(play_batch, task, key=task["key"])
                futures.append(nxt)
                done.add(nxt)
    finally:
        with contextlib.suppress(Exception):
            client.cancel(futures, force=True)
        with contextlib.suppress(Exception):
            client.close(timeout=1)


def _take(queue: Iterator[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        task = next(queue, None)
        if task is None:
            break
        out.append(task)
    return out
