"""``gf01 evaluate``: every instance of a bundle played by every agent of a panel, each run appended to a runs file
as it finishes; a rerun (after a crash, kill -9 or Ctrl-C) plays exactly the runs that have no final record.

Each instance is checked once and its :class:`~gf01_formal.scoring.scores.Scorer` (the exact gold set) is shared by
all agents' runs of it. With ``jobs > 1`` instances are played in worker processes (:mod:`gf01_formal.workers`:
they die with the parent), or in threads for agents that wait on I/O (an LLM endpoint); the parent alone writes
the runs file, so no record is torn or duplicated.

>>> summary = evaluate("bundle.json", [AgentSpec("random", "EVAL-CB")], "runs.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gf01_formal.agents.base import AgentSpec
from gf01_formal.instances.io import check_instance, load_artifact
from gf01_formal.instances.model import Bundle, Instance
from gf01_formal.runs.record import RunRecord, run_id
from gf01_formal.runs.runner import RunOutcome, play_run
from gf01_formal.runs.store import RunsFile
from gf01_formal.scoring.scores import Scorer
from solvers.limits import Limits


@dataclass(frozen=True)
class Settings:
    """What every run of an evaluation shares (and what a worker process needs to play one)."""

    seed: int = 0
    subset_min: bool = False
    diagnostic_seconds: float | None = None


@dataclass
class Summary:
    """What an evaluation did: runs played now, runs already done, and the statuses and Score_C of those played."""

    played: int = 0
    skipped: int = 0
    repaired_bytes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    score_c: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON (sorted keys)."""
        return {
            "played": self.played,
            "skipped": self.skipped,
            "repaired_bytes": self.repaired_bytes,
            "statuses": dict(sorted(self.statuses.items())),
            "score_c": {a: {"runs": self.by_agent[a], "certified": self.score_c[a]} for a in sorted(self.by_agent)},
        }


def evaluate(
    source: str | os.PathLike[str],
    specs: Sequence[AgentSpec],
    out: str | os.PathLike[str],
    *,
    settings: Settings = Settings(),
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    threads: bool = False,
    on_record: Callable[[RunRecord], None] | None = None,
) -> Summary:
    """Play every instance of ``source`` (a bundle or an instance file) with every agent of ``specs`` into ``out``.

    ``progress(done, total)`` is called as runs finish (``done`` counts the runs skipped as already final), and
    ``on_record(record)`` with each record written. ``threads``: with ``jobs > 1``, play in threads rather than
    worker processes (for agents that mostly wait on I/O, such as a model endpoint).
    """
    art = load_artifact(source, check_all=False)
    instances = [art] if isinstance(art, Instance) else list(art.instances)
    bundle_hash = art.instances_hash if isinstance(art, Bundle) else None
    # Every instance is checked before the first run: a bad one found after runs were written would leave a runs
    # file that a fixed bundle cannot resume (its hash changes). The problems are kept for the runs played here.
    problems = {inst.instance_id: check_instance(inst, file=str(source)) for inst in instances}
    with RunsFile(out) as store:
        return _evaluate(store, instances, problems, bundle_hash, specs, settings, jobs, str(source), threads,
                         progress, on_record)


def _evaluate(
    store: RunsFile, instances: list[Instance], problems: dict[str, Any], bundle_hash: str | None,
    specs: Sequence[AgentSpec], settings: Settings, jobs: int, file: str, threads: bool,
    progress: Callable[[int, int], None] | None, on_record: Callable[[RunRecord], None] | None,
) -> Summary:
    summary = Summary(repaired_bytes=store.repaired)
    todo: list[tuple[Instance, list[AgentSpec]]] = []
    for inst in instances:
        missing = [s for s in specs if not store.done(run_id(inst.instance_id, inst.content_hash, s.digest,
                                                             settings.seed))]
        summary.skipped += len(specs) - len(missing)
        if missing:
            todo.append((inst, missing))
    total = len(instances) * len(specs)
    done = summary.skipped
    if progress is not None:
        progress(done, total)
    for outcome in _outcomes(todo, bundle_hash, settings, jobs, file, threads, problems):
        store.append(outcome)
        rec = outcome.record
        if on_record is not None:
            on_record(rec)
        summary.played += 1
        summary.statuses[rec.status] += 1
        summary.by_agent[rec.agent_name] += 1
        summary.score_c[rec.agent_name] += rec.score_c or 0
        done += 1
        if progress is not None:
            progress(done, total)
    return summary


def _outcomes(
    todo: list[tuple[Instance, list[AgentSpec]]], bundle_hash: str | None, settings: Settings, jobs: int, file: str,
    threads: bool = False, problems: dict[str, Any] | None = None,
) -> Iterator[RunOutcome]:
    if jobs <= 1 or len(todo) <= 1:
        for inst, specs in todo:
            problem = None if problems is None else problems.get(inst.instance_id)
            yield from play_instance(inst, specs, bundle_hash, settings, file, problem)
        return
    if threads:
        yield from _threaded(todo, bundle_hash, settings, jobs, file)
        return
    from concurrent.futures import FIRST_COMPLETED, wait

    from gf01_formal.workers import pool

    with pool(jobs) as ex:
        # A bounded window of tasks in flight: results stream back as they finish, memory stays flat.
        pending: set[Any] = set()
        queue = iter(todo)
        while True:
            while len(pending) < 2 * jobs:
                item = next(queue, None)
                if item is None:
                    break
                inst, specs = item
                pending.add(ex.submit(_play_job, inst.model_dump(mode="json"), [_spec_json(s) for s in specs],
                                      bundle_hash, settings, file))
            if not pending:
                return
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=id):
                for rec, side in fut.result():
                    yield RunOutcome(RunRecord.model_validate(rec), side)


def _threaded(
    todo: list[tuple[Instance, list[AgentSpec]]], bundle_hash: str | None, settings: Settings, jobs: int, file: str
) -> Iterator[RunOutcome]:
    """Instances played by ``jobs`` threads; each instance's outcomes come back as it finishes. The threads are
    daemons: on Ctrl-C or an error the process does not wait for the episodes in flight (their records were never
    written, so the next run plays them), and a stop flag keeps them from starting new ones. The external agents'
    programs of those episodes are killed then, with their children (every group this process holds:
    :func:`gf01_formal.workers.kill_groups`): no thread will close them."""
    import queue
    import threading

    from gf01_formal.workers import kill_groups

    work: queue.SimpleQueue[tuple[Instance, list[AgentSpec]]] = queue.SimpleQueue()
    for item in todo:
        work.put(item)
    results: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            try:
                inst, specs = work.get_nowait()
            except queue.Empty:
                break
            try:
                results.put(("runs", list(play_instance(inst, specs, bundle_hash, settings, file))))
            except BaseException as ex:  # a user error (e.g. a refused key) stops the evaluation in the parent
                results.put(("error", ex))
        results.put(("done", None))

    running = min(jobs, len(todo))
    for i in range(running):
        threading.Thread(target=worker, daemon=True, name=f"gf01-evaluate-{i}").start()
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
                yield from value
    except BaseException:
        stop.set()
        kill_groups()
        raise
    finally:
        stop.set()


def play_instance(
    inst: Instance, specs: Sequence[AgentSpec], bundle_hash: str | None, settings: Settings, file: str | None = None,
    problem: Any = None,
) -> Iterator[RunOutcome]:
    """Every agent of ``specs`` plays ``inst``, sharing one checked problem (checked here unless given) and one
    scorer."""
    if problem is None:
        problem = check_instance(inst, file=file)
    scorer = Scorer(problem)
    limits = Limits(seconds=settings.diagnostic_seconds) if settings.diagnostic_seconds is not None else None
    for spec in specs:
        yield play_run(inst, problem, spec, seed=settings.seed, scorer=scorer, bundle_hash=bundle_hash,
                       subset_min=settings.subset_min, diagnostic_limits=limits)


def _spec_json(spec: AgentSpec) -> dict[str, Any]:
    return spec.to_json()


def _play_job(
    inst_json: dict[str, Any], specs: list[dict[str, Any]], bundle_hash: str | None, settings: Settings, file: str
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """One instance in a worker process: its outcomes as JSON (records travel as plain data)."""
    inst = Instance.model_validate(inst_json)
    agents = [AgentSpec.from_json(s) for s in specs]
    return [(o.record.model_dump(mode="json"), o.side_files)
            for o in play_instance(inst, agents, bundle_hash, settings, file)]
