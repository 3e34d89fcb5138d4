"""The work of a campaign (or of ``gf01 evaluate``) as tasks: batches of episodes, each with a deterministic shard
key, and the function a worker runs on one (:func:`play_batch`).

A task holds a few instances (``batch`` of them, in bundle order) and, for each, the agents that still lack a final
record there; its key hashes the run ids it will produce and the settings that shape their records, so the same
missing work always gets the same key (Dask can then recognise a task it already holds). A worker plays each
instance's agents with one shared scorer (the exact gold set is built once per instance, not once per agent), each
run with its optional diagnostic metered under the campaign's caps (:mod:`gf01_formal.scoring.caps`, inside
:func:`gf01_formal.runs.runner.play_run`: no record is changed once finished), and returns the finished runs (typed
records with their side files) with the best matches its scorers computed: the driver alone writes the runs file.
Tasks and results are typed values; they cross to worker processes and Dask workers by pickling.

A worker refuses a task made by a driver with other versions of the harness or the checker: records of one
campaign must come from one implementation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.model import Instance
from gf01_formal.runs.record import CHECKER_VERSION, HARNESS_VERSION, RunOutcome, run_id
from gf01_formal.runs.scoring_limit import SCORING_SECONDS
from hoa.errors import Gf01Error

if TYPE_CHECKING:
    from encoders.problem import Certificate
    from solvers.results import BestMatch


@dataclass(frozen=True)
class Result:
    """What a worker hands back for one task: its finished runs, in the task's order, and every best match its
    scorers computed, as (instance content hash, gold set, certificate, best match), for the driver's validation."""

    runs: list[RunOutcome]
    answers: list[tuple[str, str, Certificate, BestMatch]]


@dataclass(frozen=True)
class Plan:
    """What is played: the instances, the agents, the seed, the bundle hash and the diagnostic.

    The SubsetMin diagnostic runs under a campaign's ``caps`` (metered, :mod:`gf01_formal.scoring.caps`) or, for
    ``gf01 evaluate``, with ``subset_min`` under ``diagnostic_seconds``; ``file`` names the instances' file in
    messages.
    """

    instances: Sequence[Instance]
    specs: Sequence[AgentSpec]
    seed: int
    bundle_hash: str | None
    caps: dict[str, Any] | None = None  # CapSet.to_json() when the diagnostic runs, else None
    subset_min: bool = False
    diagnostic_seconds: float | None = None
    file: str | None = None
    gold_set: str = "M"  # where the best match ranks its gold (M(I), or MB: M_B(I))
    memory: float | None = None  # MiB of resident memory of each scoring query (None: no limit)
    scoring_seconds: float = SCORING_SECONDS  # wall seconds of one run's scoring, all its queries together

    def settings(self) -> dict[str, Any]:
        """The settings that shape records (part of every shard key)."""
        return {"seed": self.seed, "bundle_hash": self.bundle_hash, "caps": self.caps,
                "subset_min": self.subset_min, "diagnostic_seconds": self.diagnostic_seconds,
                "gold_set": self.gold_set, "memory": self.memory, "scoring_seconds": self.scoring_seconds,
                "harness_version": HARNESS_VERSION,
                "checker_version": CHECKER_VERSION}

    def run_ids(self, inst: Instance) -> list[tuple[AgentSpec, str]]:
        """(spec, run id) of every agent on ``inst``."""
        return [(s, run_id(inst.instance_id, inst.content_hash, s.digest, self.seed)) for s in self.specs]


@dataclass(frozen=True)
class Task:
    """One batch of episodes: ``items`` pairs each instance (bundle order) with the agents still to play there.

    ``key`` hashes ``settings`` and the run ids the task produces (the same missing work, the same key); ``versions``
    are the driver's harness, checker and benchmark versions, which a worker must share.
    """

    key: str
    runs: int
    items: tuple[tuple[Instance, tuple[AgentSpec, ...]], ...]
    settings: dict[str, Any]  # Plan.settings(): JSON, hashed into the key
    file: str | None
    versions: tuple[tuple[str, str], ...]


def tasks(plan: Plan, done: set[str], batch: int) -> Iterator[Task]:
    """The tasks of the work not yet done (run ids not in ``done``), ``batch`` instances each, in bundle order."""
    items: list[tuple[Instance, list[AgentSpec], list[str]]] = []
    for inst in plan.instances:
        todo = [(s, rid) for s, rid in plan.run_ids(inst) if rid not in done]
        if todo:
            items.append((inst, [s for s, _ in todo], [rid for _, rid in todo]))
    settings = plan.settings()
    for k in range(0, len(items), batch):
        chunk = items[k : k + batch]
        rids = [rid for _, _, ids in chunk for rid in ids]
        yield Task(key="gf01-shard-" + sha256_hex([settings, rids])[:24], runs=len(rids),
                   items=tuple((inst, tuple(specs)) for inst, specs, _ in chunk), settings=settings,
                   file=plan.file, versions=_versions())


def _versions() -> tuple[tuple[str, str], ...]:
    from gf01_formal.runs.record import benchmark_version

    return (("harness", HARNESS_VERSION), ("checker", CHECKER_VERSION), ("benchmark", benchmark_version()))


def play_batch(task: Task) -> Result:
    """Play one task (in a worker process or in the driver): its finished runs, in order."""
    from gf01_formal.instances.io import instance_problem
    from gf01_formal.runs.runner import play_run
    from gf01_formal.scoring.caps import CapSet
    from gf01_formal.scoring.scores import Scorer
    from solvers.limits import Limits

    if task.versions != _versions():
        raise Gf01Error(f"this worker runs {dict(_versions())}, the driver {dict(task.versions)}: install the same "
                        "gf01-formal on every worker")
    settings = task.settings
    caps = None if settings["caps"] is None else CapSet(**settings["caps"])
    seconds = settings["diagnostic_seconds"]
    limits = None if seconds is None else Limits(seconds=seconds)
    out: list[RunOutcome] = []
    answers: list[tuple[str, str, Certificate, BestMatch]] = []
    for inst, specs in task.items:
        problem = instance_problem(inst, file=task.file)
        # Each run is scored under the time and memory limits (runs/scoring_limit.py): past them the run is
        # recorded harness_error and a rerun plays it again.
        scorer = Scorer(problem, gold_set_name=settings["gold_set"])
        for spec in specs:
            out.append(play_run(inst, problem, spec, seed=settings["seed"], scorer=scorer,
                                bundle_hash=settings["bundle_hash"], subset_min=settings["subset_min"],
                                diagnostic_limits=limits, caps=caps, scoring_seconds=settings["scoring_seconds"],
                                scoring_memory=settings["memory"]))
        answers.extend((inst.content_hash, settings["gold_set"], cert, bm) for cert, bm in scorer.answers.items())
    return Result(out, answers)
